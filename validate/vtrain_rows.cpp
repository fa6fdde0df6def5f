// vTrain's single-node set (data/fidelity/vtrain_single_a100.json): Megatron-DeepSpeed GPT on 2,
// 4 or 8 A100s of one node, fp16, full recompute, 1F1B, no sequence parallelism, no ZeRO; one
// figure per row, iteration_time_ms.
#include <fmt/format.h>

#include "validate/set_reader.h"
#include "validate/sets.h"

namespace shardplan {

namespace {

// vTrain's src/config.py default vocab_size (no per-row value), before Megatron's padding.
constexpr int64_t kVocab = 50257;

FidelityRow vtrain_row(ObjectReader& r, const Cluster& node) {
  FidelityRow row;
  const int gpus = int_field(r, "gpus");
  const int hidden = int_field(r, "hidden");
  const int layers = int_field(r, "layers");
  const int seq = int_field(r, "seq");
  RowDegrees d;
  d.tp = int_field(r, "tp");
  d.pp = int_field(r, "pp");
  d.dp = int_field(r, "dp");
  d.micro_batch = int_field(r, "micro_batch");
  d.num_microbatches = int_field(r, "micro_batches_per_step");
  d.recompute = Recompute::full;
  row.layout = row_layout(d);
  row.model = gpt_model({.name = fmt::format("gpt-h{}-l{}", hidden, layers),
                         .num_layers = layers,
                         .hidden = hidden,
                         .num_heads = int_field(r, "heads"),
                         .vocab = megatron_padded_vocab(kVocab, d.tp),
                         .max_seq = seq});
  row.cluster = part_of_node(node, gpus, r.file());
  row.training = with_compute_dtype(Training{}, Dtype::fp16);
  row.training.global_batch = r.positive_integer("global_batch");
  row.training.seq_len = seq;
  row.measured_step_time_s = r.positive_number("iteration_time_ms") * 1e-3;
  row.group = fmt::format("{} on {} GPUs, gbs {}", row.model.name, gpus, row.training.global_batch);
  // The README's hard slices: tiny GEMMs at TP 8 and hidden 1024, and the bubble of PP 4.
  if (d.tp == 8 && hidden == 1024) row.pathological.push_back("TP 8 at hidden 1024");
  if (d.pp == 4) row.pathological.push_back("PP 4");
  r.ignore({"row"});
  r.reject_unknown();
  return row;
}

}  // namespace

FidelitySet read_vtrain_rows(const nlohmann::json& j, const std::string& file) {
  FidelitySet s = open_set(j, file, MeasuredFigure::step_time, "iteration_time_ms",
                           MemoryReading::allocator_reserved);
  // One node of A100 SXM (NVSwitch: inferred from the measured all-reduce, the set's hardware);
  // the A100's memory size is not stated, the 80GB DGX A100 is assumed.
  ClusterCache clusters;
  const Cluster& node = clusters.get("dgx-a100", 1);
  read_rows(s, j, file, [&](ObjectReader& r) { return vtrain_row(r, node); });
  return s;
}

}  // namespace shardplan
