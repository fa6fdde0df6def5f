// Strict reading of our JSON descriptions: every key is either read or rejected, types are
// checked, and each error names the file and the dotted field path (Calculon's rule: unknown keys
// are errors, never silently ignored).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace shardplan {

// Parses a JSON file; a missing file or a syntax error is an InputError naming the file.
nlohmann::json read_json_file(const std::string& path);

// Writes JSON atomically (temp file + rename): a failure never leaves a half-written file.
// Indented for people by default; JsonStyle::compact for large machine files (traces).
enum class JsonStyle { indented, compact };
void write_json_file(const std::string& path, const nlohmann::json& j,
                     JsonStyle style = JsonStyle::indented);

class ObjectReader {
 public:
  // `prefix` is the dotted path of this object inside the file ("" at top level, "levels[1]").
  ObjectReader(const nlohmann::json& j, std::string file, std::string prefix = "");

  bool has(std::string_view key) const;

  std::string string(std::string_view key);
  std::string string_or(std::string_view key, std::string fallback);
  bool boolean(std::string_view key);
  bool boolean_or(std::string_view key, bool fallback);
  double number(std::string_view key);
  double number_or(std::string_view key, double fallback);
  int64_t integer(std::string_view key);
  int64_t integer_or(std::string_view key, int64_t fallback);
  // > 0, as sizes and counts must be.
  int64_t positive_integer(std::string_view key);
  int64_t positive_integer_or(std::string_view key, int64_t fallback);
  double positive_number(std::string_view key);
  double positive_number_or(std::string_view key, double fallback);
  double non_negative_number_or(std::string_view key, double fallback);

  ObjectReader object(std::string_view key);
  std::vector<ObjectReader> objects(std::string_view key);  // an array of objects
  const nlohmann::json& raw(std::string_view key);          // marks the key read

  // Marks keys as known-but-unused (e.g. "source", which documents a figure).
  void ignore(std::initializer_list<std::string_view> keys);
  // Throws on the first key never read, listing the keys this object accepts.
  void reject_unknown() const;

  // An error about `key` in this object, with the file and full field path filled in.
  [[noreturn]] void fail(std::string_view key, const std::string& reason,
                         const std::string& hint = "") const;

  const std::string& file() const { return file_; }
  std::string path(std::string_view key) const;

 private:
  const nlohmann::json& require(std::string_view key);
  const nlohmann::json* find(std::string_view key);

  const nlohmann::json& j_;
  std::string file_;
  std::string prefix_;
  std::set<std::string, std::less<>> read_;
  std::set<std::string, std::less<>> known_;  // every key asked for, present or not
};

}  // namespace shardplan
