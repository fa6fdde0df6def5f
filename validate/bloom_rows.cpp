// BLOOM's chronicles (data/fidelity/bloom_chronicles.json): Megatron-DeepSpeed trials of
// 176B-206B-class models on Jean Zay's A100 80GB nodes (bloom-cluster.json), ZeRO-1, full
// recompute, seq 2048; sec_per_it, nvidia-smi memory and OOM per row.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/presets.h"
#include "core/stage_split.h"
#include "validate/set_reader.h"
#include "validate/sets.h"

namespace shardplan {

namespace {

// tr11-176B-ml.slurm: --pad-vocab-size-to 250880 (already a multiple of 128 × 8); SEQ_LEN 2048.
constexpr int64_t kVocab = 250880;
constexpr int kSeq = 2048;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::string_view kPartitionByType = "--pp-partition-method 'type:transformer|embedding'";
// DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py) accumulates the gradients in
// fp32 buffers of every parameter, not partitioned over dp (its fp32 master weights and moments
// are): the 02-28 rows' flag.
constexpr std::string_view kFp32Accumulation =
    "BF16 optimizer with fp32 gradient accumulation (not sharded)";

// The layers of each pipeline stage as DeepSpeed's PipelineModule partitions them, where the
// layers do not divide over pp (an even split is the layout's default). Megatron-DeepSpeed's
// GPTModelPipe puts the tied embedding at both ends of the layer list. With
// --pp-partition-method 'type:transformer|embedding' each embedding counts as one layer (the
// set's pipeline_partition: layers + 2 divide pp), Megatron's accounted split; by DeepSpeed's
// default, partition_method 'parameters' (deepspeed/runtime/pipe/module.py), the stages balance
// parameters, and each end's embedding weighs its V·h weights in layers (head_layers).
// `why`: the reason when DeepSpeed would refuse the layers.
std::vector<int> deepspeed_split(const Model& m, int pp, bool by_type, std::string& why) {
  if (pp <= 1 || m.num_layers % pp == 0) return {};
  if (by_type) return megatron_accounted_split(m.num_layers, pp, 1, true, true, why);
  const int ends = head_layers(m);
  return balanced_split(m.num_layers, pp, ends, ends);
}

FidelityRow bloom_row(ObjectReader& r, const Cluster& node) {
  FidelityRow row;
  const int nodes = int_field(r, "nodes");
  const std::optional<int> layers = optional_int(r, "layers");
  if (!layers) row.refused = "layers unknown";
  RowDegrees d;
  d.dp = int_field(r, "dp");
  d.tp = int_field(r, "tp");
  d.pp = int_field(r, "pp");
  d.zero = int_field(r, "zero");
  d.micro_batch = int_field(r, "mbs");
  d.recompute = Recompute::full;
  const int64_t gbs = r.positive_integer("gbs");
  // What does not divide is refused by validate_layout when the row is priced.
  d.num_microbatches =
      static_cast<int>(std::max<int64_t>(1, gbs / (int64_t{d.micro_batch} * d.dp)));
  row.layout = row_layout(d);
  // ALiBi (--position-embedding-type alibi) has no position parameters; the model description
  // has no ALiBi, and RoPE is its closest: no learned positions, a bias computed in attention.
  // The embedding LayerNorm (--embed-layernorm, 2h parameters) is left out.
  row.model = gpt_model({.name = r.string("size"),
                         .num_layers = layers.value_or(0),
                         .hidden = r.positive_integer("hidden"),
                         .num_heads = int_field(r, "heads"),
                         .vocab = kVocab,
                         .max_seq = kSeq});
  row.model.position_embedding = PositionEmbedding::rope;
  const nlohmann::json& flags = r.raw("flags");
  const auto flagged = [&](std::string_view flag) {
    return std::any_of(flags.begin(), flags.end(), [&](const nlohmann::json& f) {
      return f.is_string() && f.get<std::string>() == flag;
    });
  };
  if (layers) {
    std::string why;
    row.layout.stages = deepspeed_split(row.model, d.pp, flagged(kPartitionByType), why);
    if (!why.empty()) row.refused = why;
  }
  row.cluster = with_nodes(node, nodes, node.name);
  const std::string precision = r.string("precision");
  if (precision != "fp16" && precision != "bf16")
    r.fail("precision", "expected fp16 or bf16, found \"" + precision + "\"");
  row.training = with_compute_dtype(Training{}, precision == "fp16" ? Dtype::fp16 : Dtype::bf16);
  if (flagged(kFp32Accumulation)) row.training.grad_dtype = Dtype::fp32;
  row.training.global_batch = gbs;
  row.training.seq_len = kSeq;
  row.ran = !r.boolean("oom");
  if (const auto s = optional_number(r, "sec_per_it"); s && row.ran) row.measured_step_time_s = *s;
  // nvidia-smi read by eye; "GB" is probably GiB (nvidia-smi prints MiB): the set's memory_note.
  if (const auto gb = optional_number(r, "mem_GB"); gb && row.ran)
    row.measured_memory_bytes = *gb * kGiB;
  row.group = fmt::format("{} on {} nodes, gbs {}", row.model.name, nodes, gbs);
  r.ignore({"table", "line", "section", "date", "notes", "dims_status", "sec_source", "tflops",
            "repeat"});
  r.reject_unknown();
  return row;
}

}  // namespace

FidelitySet read_bloom_rows(const nlohmann::json& j, const std::string& file) {
  FidelitySet s =
      open_set(j, file, MeasuredFigure::step_time, "sec_per_it", MemoryReading::nvidia_smi);
  ObjectReader header(j, file);
  const std::string cluster_file =
      (std::filesystem::path(file).parent_path() / header.string("cluster_file")).string();
  const Cluster node = load_cluster(cluster_file, 1);
  read_rows(s, j, file, [&](ObjectReader& r) { return bloom_row(r, node); });
  return s;
}

}  // namespace shardplan
