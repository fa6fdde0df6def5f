// Strict reading of our JSON descriptions: every key is either read or rejected, types are
// checked, and each error names the file and the dotted field path (Calculon's rule: unknown keys
// are errors, never silently ignored).
#pragma once

#include <cstdint>
#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/error.h"

namespace shardplan {

// Parses JSON from `source` (a file's path, for messages). A syntax error, a number no double
// holds, a key twice in one object and nesting deeper than 64 levels are InputErrors naming the
// source and the dotted path.
nlohmann::json parse_json(std::istream& in, const std::string& source);
// parse_json of a file; a missing file is an InputError naming it.
nlohmann::json read_json_file(const std::string& path);

// A value as an error message shows it: its JSON, cut to a readable excerpt.
std::string json_excerpt(const nlohmann::json& v);

// Whether `path` can be written, checked by writing and removing `path`.tmp: run before long work
// whose result goes there. A folder, a missing or read-only folder are InputErrors naming it.
void check_writable(const std::string& path);

// Writes `text` atomically (temp file + rename): a failure never leaves a half-written file.
void write_text_file(const std::string& path, const std::string& text);

// write_text_file of JSON, indented for people by default; JsonStyle::compact for large machine
// files (traces).
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

// An integer field stored in an `int` (layers, heads, counts); out of range is an InputError.
int int_field(ObjectReader& r, std::string_view key);
int int_field_or(ObjectReader& r, std::string_view key, int fallback);

// A string field naming a value of an enum table; an unknown name lists the choices.
template <class E, size_t N>
E enum_field(ObjectReader& r, std::string_view key, const EnumNames<E, N>& names) {
  const std::string name = r.string(key);
  if (auto v = enum_from_name(name, names)) return *v;
  r.fail(key, "unknown value \"" + name + "\"", "one of: " + enum_choices(names));
}

template <class E, size_t N>
E enum_field_or(ObjectReader& r, std::string_view key, E fallback, const EnumNames<E, N>& names) {
  if (r.has(key)) return enum_field(r, key, names);
  r.ignore({key});  // listed among the accepted fields
  return fallback;
}

}  // namespace shardplan
