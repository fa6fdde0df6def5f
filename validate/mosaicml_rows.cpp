// MosaicML llm-foundry's benchmarks (data/fidelity/mosaicml_benchmarks.json): MPT with PyTorch
// FSDP, every GPU a data-parallel rank, on A100 40/80GB and H100; tokens_per_s per row.
#include <fmt/format.h>

#include <map>

#include "validate/set_reader.h"
#include "validate/sets.h"

namespace shardplan {

namespace {

// The cluster each table's GPU string ran on: DGX-class nodes of 8 (the smallest runs use 8 GPUs;
// the A100 tables' 1600 Gbps RoCE per node is the DGX A100's 8 × 200 Gb/s).
const std::map<std::string, std::string> kClusterOfGpu{
    {"h100_80gb", "dgx-h100"}, {"a100_80gb", "dgx-a100"}, {"a100_40gb", "dgx-a100-40gb"}};
constexpr int kGpusPerNode = 8;

// MPT's yamls: learned positions, GeLU MLP of expansion_ratio × d_model, biases, tied embeddings.
Model mpt_model(ObjectReader m, const std::string& name, int64_t seq) {
  const int64_t hidden = m.positive_integer("d_model");
  Model model = gpt_model({.name = "mpt-" + name,
                           .num_layers = int_field(m, "n_layers"),
                           .hidden = hidden,
                           .num_heads = int_field(m, "n_heads"),
                           .ffn_hidden = m.positive_integer("expansion_ratio") * hidden,
                           .vocab = m.positive_integer("vocab_size"),
                           .max_seq = seq});
  m.ignore({"where"});
  m.reject_unknown();
  return model;
}

std::string mosaicml_refusal(bool cpu_offload) {
  if (cpu_offload) return "activation CPU offload not modelled";
  return "";
}

FidelityRow mosaicml_row(ObjectReader& r, const nlohmann::json& models, ClusterCache& clusters) {
  FidelityRow row;
  const std::string name = r.string("model");
  if (!models.contains(name)) r.fail("model", "\"" + name + "\" is not in the set's models");
  const int64_t seq = r.positive_integer("seq");
  row.model = mpt_model(ObjectReader(models.at(name), r.file(), "models." + name), name, seq);
  const int gpus = int_field(r, "gpus");
  const std::string gpu = r.string("gpu");
  const auto cluster = kClusterOfGpu.find(gpu);
  if (cluster == kClusterOfGpu.end()) r.fail("gpu", "no cluster description for \"" + gpu + "\"");
  row.cluster = clusters.get(cluster->second, std::max(1, gpus / kGpusPerNode));
  const std::string precision = r.string("precision");
  row.refused = mosaicml_refusal(r.boolean("activation_cpu_offload"));
  const std::string sharding = r.string("sharding_strategy");
  if (sharding != "FULL_SHARD" && sharding != "SHARD_GRAD_OP")
    r.fail("sharding_strategy", "expected FULL_SHARD or SHARD_GRAD_OP, found " + sharding);
  RowDegrees d;
  d.dp = gpus;
  d.zero = sharding == "FULL_SHARD" ? 3 : 2;  // ZeRO-3 = FSDP full shard; SHARD_GRAD_OP = ZeRO-2
  d.micro_batch = int_field(r, "mbs");
  d.num_microbatches = int_field(r, "grad_acc");
  d.recompute = r.boolean("activation_checkpointing") ? Recompute::full : Recompute::none;
  row.layout = row_layout(d);
  row.training = with_compute_dtype(Training{}, Dtype::bf16);
  // Composer's amp_fp8 runs Transformer Engine's fp8_autocast with its default recipe,
  // DelayedScaling (composer/core/precision.py).
  if (precision == "amp_fp8")
    row.training.fp8 = Fp8Recipe::delayed;
  else if (precision != "amp_bf16" && precision != "bf16")
    r.fail("precision", "expected amp_bf16, bf16 or amp_fp8, found " + precision);
  // Composer's FSDP presets: DEFAULT reduces gradients in fp32, PURE in the low precision.
  if (r.string("fsdp_mixed_precision") == "DEFAULT") row.training.grad_dtype = Dtype::fp32;
  row.training.global_batch = r.positive_integer("gbs");
  row.training.seq_len = seq;
  row.measured_step_time_s =
      static_cast<double>(row.training.tokens_per_step()) / r.positive_number("tokens_per_s");
  row.group = fmt::format("{} seq {} on {} {}, gbs {}", row.model.name, seq, gpus, gpu,
                          row.training.global_batch);
  r.ignore({"table", "line", "mfu_pct", "hfu_pct", "model_tflops_per_gpu", "samples_per_s",
            "tokens_per_s_per_gpu", "gbs_tokens", "n_params"});
  r.reject_unknown();
  return row;
}

}  // namespace

FidelitySet read_mosaicml_rows(const nlohmann::json& j, const std::string& file) {
  FidelitySet s =
      open_set(j, file, MeasuredFigure::throughput, "tokens_per_s", MemoryReading::allocator_reserved);
  ObjectReader header(j, file);
  const nlohmann::json& models = header.raw("models");
  ClusterCache clusters;
  read_rows(s, j, file, [&](ObjectReader& r) { return mosaicml_row(r, models, clusters); });
  return s;
}

}  // namespace shardplan
