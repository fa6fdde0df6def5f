// The Ultra-Scale Playbook's development half (data/fidelity/ultrascale_dev.json): nanotron
// Llama-style models on 1-64 nodes of 8 H100 over AWS EFA (topologies/aws-p5-h100.json), bf16 with
// fp32 gradient accumulation, TP with sequence parallelism, 1F1B, no recompute, ZeRO 0 or 1;
// tok_s_gpu, the allocator's peak memory and whether the run crashed.
#include <fmt/format.h>

#include <map>

#include "validate/set_reader.h"
#include "validate/sets.h"

namespace shardplan {

namespace {

constexpr int kSeq = 4096;  // index.md: "a sequence length of 4,096"
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The README's pathological runs: under this many tok/s/GPU they look broken or degraded.
constexpr double kDegradedTokensPerGpu = 1000;

Model ultrascale_model(ObjectReader m, const std::string& name) {
  Model model = llama_model({.name = name,
                             .num_layers = int_field(m, "num_hidden_layers"),
                             .hidden = m.positive_integer("hidden_size"),
                             .num_heads = int_field(m, "num_attention_heads"),
                             .num_kv_heads = int_field(m, "num_key_value_heads"),
                             .ffn_hidden = m.positive_integer("intermediate_size"),
                             .vocab = m.positive_integer("vocab_size"),
                             .max_seq = kSeq,
                             .tied_embeddings = m.boolean("tie_word_embeddings")});
  m.ignore({"params_billion"});
  m.reject_unknown();
  return model;
}

FidelityRow ultrascale_row(ObjectReader& r, const std::map<std::string, Model>& models,
                           ClusterCache& clusters) {
  FidelityRow row;
  const std::string name = r.string("model");
  const auto model = models.find(name);
  if (model == models.end()) r.fail("model", "\"" + name + "\" is not in the set's models");
  row.model = model->second;
  const int nodes = int_field(r, "nodes");
  row.cluster = clusters.get("aws-p5-h100", nodes);
  RowDegrees d;
  d.dp = int_field(r, "dp");
  d.tp = int_field(r, "tp");
  d.pp = int_field(r, "pp");
  d.zero = int_field(r, "zero");
  d.micro_batch = int_field(r, "mbs");
  d.num_microbatches = int_field(r, "grad_acc");
  d.sequence_parallel = d.tp > 1;  // tp_mode REDUCE_SCATTER
  row.layout = row_layout(d);
  row.training = with_compute_dtype(Training{}, Dtype::bf16);
  row.training.grad_dtype = Dtype::fp32;  // accumulate_grad_in_fp32
  // What ran: dp × mbs × grad_acc, which differs from the printed GBS 256 in 12 rows
  // (gbs_inconsistent); nanotron builds its batches from these three.
  row.training.global_batch = row.layout.global_batch();
  row.training.seq_len = kSeq;
  row.ran = r.boolean("ran");
  const std::optional<double> tokens_per_gpu = optional_number(r, "tok_s_gpu");
  if (row.ran && tokens_per_gpu && *tokens_per_gpu > 0)
    row.measured_step_time_s = static_cast<double>(row.training.tokens_per_step()) /
                               (*tokens_per_gpu * static_cast<double>(row.cluster.world()));
  if (const auto gb = optional_number(r, "gpu_memory_GB"); gb && row.ran)
    row.measured_memory_bytes = *gb * kGiB;  // GiB despite the label (the set's memory_note)
  if (row.ran && tokens_per_gpu && *tokens_per_gpu < kDegradedTokensPerGpu)
    row.pathological.push_back("under 1,000 tok/s/GPU");
  if (d.tp > 8) row.pathological.push_back("TP > 8");
  row.group = fmt::format("{} on {} nodes", name, nodes);
  r.ignore(
      {"gbs", "mfu_pct", "tok_s", "plotted_as_crash", "gbs_inconsistent", "crash_config_also_ran"});
  r.reject_unknown();
  return row;
}

}  // namespace

FidelitySet read_ultrascale_rows(const nlohmann::json& j, const std::string& file) {
  FidelitySet s =
      open_set(j, file, MeasuredFigure::throughput, "tok_s_gpu", MemoryReading::allocator_reserved);
  ObjectReader header(j, file);
  std::map<std::string, Model> models;
  for (const auto& [name, dims] : header.raw("models").items())
    if (dims.is_object())
      models.emplace(name, ultrascale_model(ObjectReader(dims, file, "models." + name), name));
  // nanotron's helpers.py log_throughput: only world rank 0 writes the CSV the plot shows.
  s.memory_on_first_stage = true;
  ClusterCache clusters;
  read_rows(s, j, file, [&](ObjectReader& r) { return ultrascale_row(r, models, clusters); });
  return s;
}

}  // namespace shardplan
