// The development set (data/fidelity/, described in data/README.md): which file each set is read
// from, which framework ran it (the one place that says so), and how that framework runs the
// layers (its framework profile, frameworks/NAME.json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simulator/execution_options.h"
#include "validate/fidelity_set.h"

namespace shardplan {

using SetReader = FidelitySet (*)(const nlohmann::json& j, const std::string& file);

struct SetEntry {
  std::string name;       // --set NAME, and the file's stem
  std::string file;       // under the data folder's fidelity/
  std::string framework;  // framework profile name: frameworks/NAME.json
  SetReader read = nullptr;
};

// Every set, in the order reports list them.
const std::vector<SetEntry>& fidelity_sets();

// The set named `name`; InputError listing the names otherwise.
const SetEntry& find_set(const std::string& name);

// Reads one set from `folder` (the data folder's fidelity/ or --data DIR).
FidelitySet read_set(const SetEntry& entry, const std::string& folder);

// How `framework_name` runs the layers (attention kernel, dropout, fused kernels): its framework
// profile, frameworks/NAME.json (core/framework.h).
ExecutionOptions set_execution(const std::string& framework_name);

// The readers (validate/*_rows.cpp).
FidelitySet read_vtrain_rows(const nlohmann::json& j, const std::string& file);
FidelitySet read_bloom_rows(const nlohmann::json& j, const std::string& file);
FidelitySet read_ultrascale_rows(const nlohmann::json& j, const std::string& file);
FidelitySet read_nemo_rows(const nlohmann::json& j, const std::string& file);
FidelitySet read_mosaicml_rows(const nlohmann::json& j, const std::string& file);

}  // namespace shardplan
