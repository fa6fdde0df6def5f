// NeMo and Megatron-Bridge pre-training results (data/fidelity/nemo_performance.json):
// Megatron-Core on DGX systems, tokens_per_s_per_gpu. shardplan prices BF16 only (no FP8 compute)
// on systems topologies/ describes (a preset named as the system, lower-case: dgx-h100), and the
// dense models whose dimensions the set gives.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/presets.h"
#include "validate/set_reader.h"
#include "validate/sets.h"

namespace shardplan {

namespace {

// Table names and the set's model keys differ in case and separators ("LLAMA3_8B" is
// "LLAMA3-8B": the set's models._note).
std::string model_key(std::string name) {
  std::ranges::replace(name, '_', '-');
  std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

std::string lower(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Why a row cannot be priced before its layout is looked at; empty when it can.
std::string nemo_refusal(const std::string& system, const std::optional<std::string>& precision,
                         bool model_described, const std::vector<std::string>& topologies) {
  if (!std::ranges::binary_search(topologies, lower(system)))
    return "no cluster description of the system in topologies/";
  if (!precision) return "precision not stated";
  if (*precision != "BF16") return "FP8/MXFP8/NVFP4 compute not modelled";
  if (!model_described) return "model dimensions not in the set (MoE models are not described)";
  // The set's models carry no vocabulary ("tokenizer-dependent and not in these classes").
  return "vocabulary size not in the set";
}

FidelityRow nemo_row(ObjectReader& r, const std::map<std::string, std::string>& models,
                     const std::vector<std::string>& topologies) {
  FidelityRow row;
  const std::string system = r.string("system");
  const std::string model = r.string("model");
  const std::optional<std::string> precision =
      r.raw("precision").is_null() ? std::nullopt : std::optional(r.string("precision"));
  row.refused = nemo_refusal(system, precision, models.contains(model_key(model)), topologies);
  row.group =
      fmt::format("{} on {} GPUs, gbs {}", model, int_field(r, "gpus"), r.positive_integer("gbs"));
  r.ignore({"source_id",
            "release",
            "task",
            "mbs",
            "seq",
            "fsdp",
            "tp",
            "pp",
            "cp",
            "vp",
            "ep",
            "ga",
            "dp",
            "tokens_per_s_per_gpu",
            "model_tflops_per_gpu",
            "without_cp_model_tflops_per_gpu",
            "variant",
            "notes",
            "line",
            "earlier_revisions"});
  r.reject_unknown();
  return row;
}

}  // namespace

FidelitySet read_nemo_rows(const nlohmann::json& j, const std::string& file) {
  FidelitySet s = open_set(j, file, MeasuredFigure::throughput, "tokens_per_s_per_gpu",
                           MemoryReading::allocator_reserved);
  ObjectReader header(j, file);
  std::map<std::string, std::string> models;  // key → the set's name
  for (const auto& [name, dims] : header.raw("models").items())
    if (dims.is_object()) models.emplace(model_key(name), name);
  const std::vector<std::string> topologies = preset_names("topologies");
  read_rows(s, j, file, [&](ObjectReader& r) { return nemo_row(r, models, topologies); });
  return s;
}

}  // namespace shardplan
