// NeMo and Megatron-Bridge pre-training results (data/fidelity/nemo_performance.json):
// Megatron-Core on DGX systems, tokens_per_s_per_gpu. shardplan prices the rows on systems
// topologies/ describes (kClusterOfSystem), in BF16 or with
// Transformer Engine's FP8 recipes (core/dtype.h: Fp8Recipe), for the dense models whose
// dimensions the set gives and a model preset shares, which gives the vocabulary the set leaves
// out ("tokenizer-dependent and not in these classes").
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/error.h"
#include "core/presets.h"
#include "core/stage_split.h"
#include "validate/set_reader.h"
#include "validate/sets.h"

namespace shardplan {

namespace {

std::string lower(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Table names and the set's model keys differ in case and separators ("LLAMA3_8B" is
// "LLAMA3-8B": the set's models._note).
std::string model_key(std::string name) {
  std::ranges::replace(name, '_', '-');
  return lower(std::move(name));
}

// The set's precision column as a Transformer Engine recipe: FP8 is per-tensor delayed scaling
// (the NeMo 24.07 page's "FP8" is TE's DelayedScaling default), FP8-CS current scaling, MXFP8 and
// FP8-MX block scaling; none for BF16. NVFP4 and rows that state none are refused.
std::optional<Fp8Recipe> recipe_of(const std::string& precision) {
  if (precision == "BF16") return Fp8Recipe::none;
  if (precision == "FP8") return Fp8Recipe::delayed;
  if (precision == "FP8-CS") return Fp8Recipe::current;
  if (precision == "MXFP8" || precision == "FP8-MX") return Fp8Recipe::mxfp8;
  return std::nullopt;
}

// The model presets (models/), read once.
const std::vector<Model>& preset_models() {
  static const std::vector<Model> models = [] {
    std::vector<Model> out;
    for (const std::string& name : preset_names("models")) out.push_back(load_model(name));
    return out;
  }();
  return models;
}

// The preset whose dimensions are the set's entry's (layers, hidden, FFN, heads, query groups),
// for its vocabulary and family; where several are (Llama 2 and 3 70B differ only in vocabulary),
// the one named as the entry ("LLAMA3-70B" is llama3-70b); none when no preset is that model.
std::optional<Model> preset_with_dims(ObjectReader d, const std::string& key) {
  const int layers = int_field(d, "num_layers");
  const int64_t hidden = d.positive_integer("hidden_size");
  const int64_t ffn = d.positive_integer("ffn_hidden_size");
  const int heads = int_field(d, "num_attention_heads");
  // Absent or null: one group per head (multi-head attention).
  const int kv_heads = optional_int(d, "num_query_groups").value_or(heads);
  std::vector<Model> alike;
  for (const Model& m : preset_models())
    if (m.num_layers == layers && m.hidden == hidden && m.ffn_hidden == ffn &&
        m.num_heads == heads && m.num_kv_heads == kv_heads)
      alike.push_back(m);
  if (alike.size() == 1) return alike.front();
  for (const Model& m : alike)
    if (m.name == model_key(key)) return m;
  return std::nullopt;
}

// The topology preset of each DGX system: DGX GB200 is the GB200 NVL72 rack (NVIDIA DGX GB200
// datasheet: 72 Blackwell GPUs in one NVLink domain, 18 compute trays of 4), which
// topologies/gb200-nvl72.json describes by the tray. The B300 and GB300 systems have none.
const std::map<std::string, std::string> kClusterOfSystem{
    {"DGX-H100", "dgx-h100"}, {"DGX-B200", "dgx-b200"}, {"DGX-GB200", "gb200-nvl72"}};

struct NemoContext {
  const nlohmann::json& models;  // the set's model dimensions, by model_key
  const std::string& file;
  ClusterCache clusters;
};

// Why a row cannot be priced before its layout is validated; empty when it can.
std::string nemo_refusal(const std::string& system, const std::optional<std::string>& precision,
                         const std::optional<Model>& model, bool described, bool throughput) {
  if (!kClusterOfSystem.contains(system))
    return "no cluster description of the system in topologies/";
  if (!precision) return "precision not stated";
  if (!recipe_of(*precision)) return "NVFP4 compute not modelled";
  if (!described)
    return "model dimensions not in the set (MoE models are not described), nor a model preset of "
           "its name";
  if (!model) return "vocabulary size not in the set, and no model preset has these dimensions";
  if (!throughput) return "throughput published as model TFLOP/s only";
  return "";
}

FidelityRow nemo_row(ObjectReader& r, NemoContext& c) {
  FidelityRow row;
  const std::string system = r.string("system");
  const std::string name = r.string("model");
  const std::optional<std::string> precision =
      r.raw("precision").is_null() ? std::nullopt : std::optional(r.string("precision"));
  // The set's models are keyed as the page names them; the rows' names differ in separators.
  std::optional<std::string> key;
  for (const auto& [k, dims] : c.models.items())
    if (dims.is_object() && model_key(k) == model_key(name)) key = k;
  // The MoE models the set does not describe are priced where a preset is the model by name
  // ("Qwen3_30B_a3B" is qwen3-30b-a3b), from its Hugging Face config.
  std::optional<Model> preset =
      key ? preset_with_dims(ObjectReader(c.models.at(*key), c.file, "models." + *key), *key)
          : std::nullopt;
  if (!key)
    for (const Model& m : preset_models())
      if (m.name == model_key(name)) preset = m;
  const std::optional<int> tokens_per_s = optional_int(r, "tokens_per_s_per_gpu");
  row.refused = nemo_refusal(system, precision, preset, key || preset, tokens_per_s.has_value());
  const int gpus = int_field(r, "gpus");
  const int64_t gbs = r.positive_integer("gbs");
  row.group = fmt::format("{} on {} GPUs, gbs {}", name, gpus, gbs);
  if (row.refused.empty()) {
    const int64_t seq = r.positive_integer("seq");
    row.model = *preset;
    row.model.max_seq = std::max(row.model.max_seq, seq);  // long-context rows scale RoPE
    const int tp = int_field(r, "tp"), pp = int_field(r, "pp"), cp = int_field(r, "cp");
    const std::optional<int> fsdp = optional_int(r, "fsdp");
    RowDegrees d;
    d.tp = tp, d.pp = pp;
    d.dp = std::max(1, gpus / (tp * pp * cp));
    // The archive's FSDP column: 0 is DDP with Megatron's distributed optimizer (ZeRO-1), above
    // 0 Megatron-FSDP (ZeRO-3). Megatron-Bridge's recipes run sequence parallelism with tp.
    d.zero = fsdp.value_or(0) > 0 ? 3 : 1;
    d.sequence_parallel = tp > 1;
    d.micro_batch = int_field(r, "mbs");
    d.num_microbatches = static_cast<int>(std::max<int64_t>(1, gbs / (d.micro_batch * d.dp)));
    row.layout = row_layout(d);
    row.layout.cp = cp;
    row.layout.vpp = optional_int(r, "vp").value_or(1);
    if (row.layout.vpp > 1) row.layout.schedule = Schedule::interleaved;
    // Layers that do not divide over the virtual stages: NeMo's Llama 3.1 405B recipe counts the
    // embedding and the loss as a layer each (account_for_embedding_in_pipeline_split and
    // account_for_loss_in_pipeline_split, nemo/collections/llm/recipes/llama31_405b.py).
    const int chunks = pp * row.layout.vpp;
    if (row.model.num_layers % chunks != 0)
      row.layout.stages = canonical_split(balanced_split(row.model.num_layers, chunks, 1, 1));
    row.layout.ep = optional_int(r, "ep").value_or(1);
    row.model.vocab = megatron_padded_vocab(row.model.vocab, tp);
    const std::string& cluster = kClusterOfSystem.at(system);
    try {
      row.cluster =
          c.clusters.get(cluster, std::max(1, gpus / c.clusters.get(cluster, 1).devices_per_node));
    } catch (const InputError& e) {
      // 256 GPUs fill no whole NVL72 domains: how the job sat in its racks is not stated.
      row.refused = "rejected by validation: " + e.field;
    }
    row.training = with_compute_dtype(Training{}, Dtype::bf16);
    row.training.fp8 = *recipe_of(*precision);
    row.training.global_batch = gbs;
    row.training.seq_len = seq;
    row.measured_step_time_s = static_cast<double>(gbs * seq) / (*tokens_per_s * gpus);
  }
  r.ignore({"source_id", "release", "task", "mbs", "seq", "fsdp", "tp", "pp", "cp", "vp", "ep",
            "ga", "dp", "model_tflops_per_gpu", "without_cp_model_tflops_per_gpu", "variant",
            "notes", "line", "earlier_revisions"});
  r.reject_unknown();
  return row;
}

}  // namespace

FidelitySet read_nemo_rows(const nlohmann::json& j, const std::string& file) {
  FidelitySet s = open_set(j, file, MeasuredFigure::throughput, "tokens_per_s_per_gpu",
                           MemoryReading::allocator_reserved);
  ObjectReader header(j, file);
  NemoContext c{header.raw("models"), file, {}};
  read_rows(s, j, file, [&](ObjectReader& r) { return nemo_row(r, c); });
  return s;
}

}  // namespace shardplan
