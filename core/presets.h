// Finding descriptions by preset name or path: models/, topologies/ and frameworks/ in the data folder
// (SHARDPLAN_DATA_DIR in the environment, else the source tree shardplan was built from).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/model.h"

namespace shardplan {

std::string data_dir();

// The file a preset name (<data>/<folder>/<name>.json) or a path stands for; an unknown name is an
// InputError listing the closest presets of that folder (`what`: "model", "framework").
std::string resolve_preset(const std::string& name_or_path, const std::string& folder,
                           const char* what);

// Preset names in a data subfolder ("models", "topologies"), sorted.
std::vector<std::string> preset_names(const std::string& folder);

// The candidates closest to a misspelt name (edit distance within a third of its length, or
// containing it), closest first, at most three: for "did you mean" hints.
std::vector<std::string> closest_names(const std::string& name,
                                       const std::vector<std::string>& candidates);

// A preset name, a path to our JSON, a Hugging Face config.json, or a folder holding one.
// Unknown names get an error listing the closest presets ("did you mean").
Model load_model(const std::string& name_or_path);

// A preset name or path; `nodes` scales the node description (--nodes N).
Cluster load_cluster(const std::string& name_or_path, std::optional<int> nodes = std::nullopt);

}  // namespace shardplan
