#include "validate/sets.h"

#include <filesystem>

#include "core/error.h"
#include "core/framework.h"
#include "core/json_reader.h"
#include "core/presets.h"

namespace shardplan {

const std::vector<SetEntry>& fidelity_sets() {
  static const std::vector<SetEntry> sets{
      {"vtrain_single_a100", "vtrain_single_a100.json", "megatron-deepspeed", read_vtrain_rows},
      {"bloom_chronicles", "bloom_chronicles.json", "megatron-deepspeed", read_bloom_rows},
      {"ultrascale_dev", "ultrascale_dev.json", "nanotron", read_ultrascale_rows},
      {"nemo_performance", "nemo_performance.json", "megatron-core", read_nemo_rows},
      {"mosaicml_benchmarks", "mosaicml_benchmarks.json", "llm-foundry", read_mosaicml_rows},
  };
  return sets;
}

const SetEntry& find_set(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& s : fidelity_sets()) {
    if (s.name == name) return s;
    names.push_back(s.name);
  }
  std::string hint;
  for (const auto& n : closest_names(name, names))
    hint += (hint.empty() ? "did you mean " : " or ") + n;
  if (!hint.empty()) hint += "? ";
  hint += "sets:";
  for (const auto& n : names) hint += " " + n;
  throw InputError("--set", "", "no fidelity set named \"" + name + "\"", hint);
}

FidelitySet read_set(const SetEntry& entry, const std::string& folder) {
  const std::string path = (std::filesystem::path(folder) / entry.file).string();
  FidelitySet s = entry.read(read_json_file(path), path);
  s.framework = entry.framework;
  const Framework f = load_framework(entry.framework);
  for (FidelityRow& row : s.rows) row.training = run_by(row.training, f);
  return s;
}

ExecutionOptions set_execution(const std::string& framework_name) {
  return execution_options(load_framework(framework_name));
}

}  // namespace shardplan
