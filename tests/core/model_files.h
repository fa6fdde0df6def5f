// Test helpers for the model tests: load presets and Hugging Face configs by path, and catch the
// InputError a bad description raises.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/json_reader.h"
#include "core/model.h"

namespace shardplan::test {

inline std::string preset_path(const std::string& name) {
  return std::string(SHARDPLAN_SOURCE_DIR) + "/models/" + name + ".json";
}

inline std::string hf_config_path(const std::string& repo) {
  return std::string(SHARDPLAN_SOURCE_DIR) + "/tests/data/hf/" + repo + "/config.json";
}

inline Model load_file(const std::string& path) {
  return model_from_json(read_json_file(path), path);
}

// The InputError that reading `j` as `file` raises; fails the test when it reads fine.
inline InputError read_error(const nlohmann::json& j, const std::string& file) {
  try {
    model_from_json(j, file);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError reading " << file << ": " << j.dump());
  throw;  // not reached: FAIL throws
}

}  // namespace shardplan::test
