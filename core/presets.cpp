#include "core/presets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/json_reader.h"

namespace fs = std::filesystem;

namespace shardplan {

namespace {

// Levenshtein distance (insertions, deletions, substitutions), one row at a time.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({substitute, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[b.size()];
}

std::string join(const std::vector<std::string>& names, const char* sep) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

// The file a name stands for: a path when it looks like one (has a '/' or ends in .json) or is no
// preset but exists; else <data>/<folder>/<name>.json. Unknown names get a "did you mean" error.
fs::path resolve(const std::string& name_or_path, const std::string& folder, const char* what) {
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos || fs::path(name_or_path).extension() == ".json";
  if (looks_like_path) return name_or_path;
  const fs::path preset = fs::path(data_dir()) / folder / (name_or_path + ".json");
  if (fs::exists(preset)) return preset;
  if (fs::exists(name_or_path)) return name_or_path;
  const auto names = preset_names(folder);
  const auto close = closest_names(name_or_path, names);
  std::string hint = close.empty() ? "" : fmt::format("did you mean {}? ", join(close, " or "));
  hint += names.empty()
              ? fmt::format("no presets found in {} (SHARDPLAN_DATA_DIR sets the data folder)",
                            (fs::path(data_dir()) / folder).string())
              : "available: " + join(names, ", ");
  throw InputError(name_or_path, "", fmt::format("no {} preset or file of this name", what), hint);
}

}  // namespace

std::string resolve_preset(const std::string& name_or_path, const std::string& folder,
                           const char* what) {
  return resolve(name_or_path, folder, what).string();
}

std::string data_dir() {
  if (const char* env = std::getenv("SHARDPLAN_DATA_DIR"); env && *env) return env;
  return SHARDPLAN_DATA_DIR;
}

std::vector<std::string> preset_names(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(data_dir()) / folder, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> closest_names(const std::string& name,
                                       const std::vector<std::string>& candidates) {
  std::vector<std::pair<size_t, std::string>> scored;
  const size_t tolerance = std::max<size_t>(2, name.size() / 3);
  for (const auto& c : candidates) {
    const size_t d = edit_distance(name, c);
    const bool contains = name.size() >= 3 && c.find(name) != std::string::npos;
    if (d <= tolerance || contains) scored.emplace_back(d, c);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

Model load_model(const std::string& name_or_path) {
  fs::path file = resolve(name_or_path, "models", "model");
  if (fs::is_directory(file)) file /= "config.json";  // a Hugging Face model folder
  return model_from_json(read_json_file(file.string()), file.string());
}

Cluster load_cluster(const std::string& name_or_path, std::optional<int> nodes) {
  const std::string file = resolve(name_or_path, "topologies", "cluster").string();
  const Cluster c = cluster_from_json(read_json_file(file), file);
  return nodes ? with_nodes(c, *nodes, file) : c;
}

}  // namespace shardplan
