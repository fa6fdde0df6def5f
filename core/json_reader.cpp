#include "core/json_reader.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace shardplan {

namespace {

// Deeper than any description of ours (a plan nests five levels): nlohmann::json parses without
// recursion but copies, prints and destroys a value recursively, so a file of tens of thousands of
// levels would exhaust the stack.
constexpr int kMaxJsonDepth = 64;

// One open object or array while parsing, for the dotted path of what an error is about.
struct OpenValue {
  bool object = false;
  std::string name;  // "levels", "[1]": where it sits in its parent
  std::set<std::string> keys;
  std::string key;    // an object's current key
  int64_t index = 0;  // an array's current element
};

std::string dotted_path(const std::vector<OpenValue>& open, const std::string& last) {
  std::string out;
  auto append = [&](const std::string& name) {
    if (name.empty()) return;
    if (!out.empty() && name.front() != '[') out += '.';
    out += name;
  };
  for (const OpenValue& v : open) append(v.name);
  append(last);
  return out;
}

}  // namespace

nlohmann::json parse_json(std::istream& in, const std::string& source) {
  using Event = nlohmann::json::parse_event_t;
  std::vector<OpenValue> open;
  const auto child_name = [&] {
    if (open.empty()) return std::string();
    const OpenValue& parent = open.back();
    return parent.object ? parent.key : fmt::format("[{}]", parent.index);
  };
  const auto element_done = [&] {
    if (!open.empty() && !open.back().object) ++open.back().index;
  };
  const auto check = [&](int depth, Event event, nlohmann::json& parsed) {
    if (depth > kMaxJsonDepth)
      throw InputError(source, "", fmt::format("nested deeper than {} levels", kMaxJsonDepth));
    switch (event) {
      case Event::object_start:
      case Event::array_start: {
        OpenValue opened;
        opened.object = event == Event::object_start;
        opened.name = child_name();
        open.push_back(std::move(opened));
        break;
      }
      case Event::key: {
        const std::string key = parsed.get<std::string>();
        if (!open.back().keys.insert(key).second)
          throw InputError(source, dotted_path(open, key.empty() ? "\"\"" : key),
                           "appears twice in its object", "keep one of them");
        open.back().key = key;
        break;
      }
      case Event::object_end:
      case Event::array_end:
        open.pop_back();
        element_done();
        break;
      case Event::value:
        element_done();
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(in, check);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message carries line and column ("parse error at line 3, column 5: ...").
    throw InputError(source, "", fmt::format("invalid JSON: {}", e.what()));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number no double holds ("1e999"): nlohmann says "number overflow parsing '1e999'".
    throw InputError(source, dotted_path(open, open.empty() ? "" : open.back().key),
                     fmt::format("invalid JSON: {}", e.what()));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open file", "check the path");
  return parse_json(in, path);
}

namespace {

void refuse_folder(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path, "", "is a folder, not a file", "name a file to write");
}

}  // namespace

void check_writable(const std::string& path) {
  refuse_folder(path);
  std::error_code ec;
  const std::string probe = path + ".tmp";
  {
    std::ofstream out(probe, std::ios::trunc);
    if (!out)
      throw InputError(path, "", "cannot write here",
                       "check that the folder exists and that it is writable");
  }
  std::filesystem::remove(probe, ec);
}

void write_text_file(const std::string& path, const std::string& text) {
  refuse_folder(path);  // the temp file's own write finds a folder that cannot be written
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot write file", "check that the folder exists");
    out << text;
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);  // a full disk leaves no half-written file behind
      throw InputError(path, "", "write failed", "check the free space");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(path, "", "cannot replace file: " + ec.message());
  }
}

void write_json_file(const std::string& path, const nlohmann::json& j, JsonStyle style) {
  write_text_file(path, j.dump(style == JsonStyle::indented ? 2 : -1) + '\n');
}

ObjectReader::ObjectReader(const nlohmann::json& j, std::string file, std::string prefix)
    : j_(j), file_(std::move(file)), prefix_(std::move(prefix)) {
  if (!j_.is_object())
    throw InputError(file_, prefix_, fmt::format("expected an object, found {}", j_.type_name()));
}

std::string ObjectReader::path(std::string_view key) const {
  if (prefix_.empty()) return std::string(key);
  return prefix_ + "." + std::string(key);
}

void ObjectReader::fail(std::string_view key, const std::string& reason,
                        const std::string& hint) const {
  throw InputError(file_, path(key), reason, hint);
}

bool ObjectReader::has(std::string_view key) const {
  return j_.contains(key);
}

const nlohmann::json* ObjectReader::find(std::string_view key) {
  known_.emplace(key);
  auto it = j_.find(key);
  if (it == j_.end()) return nullptr;
  read_.emplace(key);
  return &*it;
}

const nlohmann::json& ObjectReader::require(std::string_view key) {
  const nlohmann::json* v = find(key);
  if (!v) fail(key, "missing required field");
  return *v;
}

namespace {
[[noreturn]] void wrong_type(const ObjectReader& r, std::string_view key, const char* expected,
                             const nlohmann::json& v) {
  r.fail(key, fmt::format("expected {}, found {} {}", expected, v.type_name(), json_excerpt(v)));
}
}  // namespace

std::string ObjectReader::string(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_string()) wrong_type(*this, key, "a string", v);
  return v.get<std::string>();
}

std::string ObjectReader::string_or(std::string_view key, std::string fallback) {
  return has(key) ? string(key) : (known_.emplace(key), std::move(fallback));
}

bool ObjectReader::boolean(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_boolean()) wrong_type(*this, key, "true or false", v);
  return v.get<bool>();
}

bool ObjectReader::boolean_or(std::string_view key, bool fallback) {
  return has(key) ? boolean(key) : (known_.emplace(key), fallback);
}

double ObjectReader::number(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_number()) wrong_type(*this, key, "a number", v);
  return v.get<double>();
}

double ObjectReader::number_or(std::string_view key, double fallback) {
  return has(key) ? number(key) : (known_.emplace(key), fallback);
}

int64_t ObjectReader::integer(std::string_view key) {
  const auto& v = require(key);
  // Past int64_t's range: an unsigned above its top would wrap to a negative, and casting a double
  // at or past 2^63 is undefined.
  const auto out_of_range = [&] {
    fail(key, fmt::format("{} is outside the range of a 64-bit integer", json_excerpt(v)));
  };
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})
    out_of_range();
  if (v.is_number_integer()) return v.get<int64_t>();
  // 4096.0 is an integer written as a float; 40.5 is not.
  if (v.is_number_float() && v.get<double>() == std::trunc(v.get<double>())) {
    if (!(v.get<double>() >= -0x1p63 && v.get<double>() < 0x1p63)) out_of_range();
    return static_cast<int64_t>(v.get<double>());
  }
  wrong_type(*this, key, "an integer", v);
}

int64_t ObjectReader::integer_or(std::string_view key, int64_t fallback) {
  return has(key) ? integer(key) : (known_.emplace(key), fallback);
}

int64_t ObjectReader::positive_integer(std::string_view key) {
  const int64_t v = integer(key);
  if (v <= 0) fail(key, fmt::format("must be positive, found {}", v));
  return v;
}

int64_t ObjectReader::positive_integer_or(std::string_view key, int64_t fallback) {
  return has(key) ? positive_integer(key) : (known_.emplace(key), fallback);
}

double ObjectReader::positive_number(std::string_view key) {
  const double v = number(key);
  if (!(v > 0)) fail(key, fmt::format("must be positive, found {}", v));
  // A subnormal figure is no measurement: dividing by it gives infinite times.
  if (v < std::numeric_limits<double>::min())
    fail(key, fmt::format("{} is too small to be a measured figure", v));
  return v;
}

double ObjectReader::positive_number_or(std::string_view key, double fallback) {
  return has(key) ? positive_number(key) : (known_.emplace(key), fallback);
}

double ObjectReader::non_negative_number_or(std::string_view key, double fallback) {
  if (!has(key)) return known_.emplace(key), fallback;
  const double v = number(key);
  if (!(v >= 0)) fail(key, fmt::format("must not be negative, found {}", v));
  return v;
}

ObjectReader ObjectReader::object(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_object()) wrong_type(*this, key, "an object", v);
  return ObjectReader(v, file_, path(key));
}

std::vector<ObjectReader> ObjectReader::objects(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_array()) wrong_type(*this, key, "an array", v);
  std::vector<ObjectReader> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string item = fmt::format("{}[{}]", path(key), i);
    if (!v[i].is_object())
      throw InputError(file_, item, fmt::format("expected an object, found {}", v[i].type_name()));
    out.emplace_back(v[i], file_, item);
  }
  return out;
}

const nlohmann::json& ObjectReader::raw(std::string_view key) {
  return require(key);
}

void ObjectReader::ignore(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) {
    known_.emplace(k);
    if (has(k)) read_.emplace(k);
  }
}

void ObjectReader::reject_unknown() const {
  for (const auto& [key, value] : j_.items()) {
    if (read_.count(key)) continue;
    std::string accepted;
    for (const auto& k : known_) accepted += (accepted.empty() ? "" : ", ") + k;
    fail(key.empty() ? "\"\"" : key, key.empty() ? "unknown field (an empty key)" : "unknown field",
         "accepted fields here: " + accepted);
  }
}

std::string json_excerpt(const nlohmann::json& v) {
  constexpr size_t kMaxShown = 60;
  std::string text = v.dump();
  if (text.size() <= kMaxShown) return text;
  const size_t total = text.size();
  text.resize(kMaxShown);
  return fmt::format("{}... ({} characters)", text, total);
}

int int_field(ObjectReader& r, std::string_view key) {
  const int64_t v = r.integer(key);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    r.fail(key, fmt::format("{} is out of range", v));
  return static_cast<int>(v);
}

int int_field_or(ObjectReader& r, std::string_view key, int fallback) {
  if (r.has(key)) return int_field(r, key);
  return static_cast<int>(r.integer_or(key, fallback));  // records the key as accepted
}

}  // namespace shardplan
