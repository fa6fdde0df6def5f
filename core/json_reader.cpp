#include "core/json_reader.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace shardplan {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open file", "check the path");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message carries line and column ("parse error at line 3, column 5: ...").
    throw InputError(path, "", fmt::format("invalid JSON: {}", e.what()));
  }
}

void write_json_file(const std::string& path, const nlohmann::json& j, JsonStyle style) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot write file", "check that the folder exists");
    out << j.dump(style == JsonStyle::indented ? 2 : -1) << '\n';
    if (!out.flush()) throw InputError(path, "", "write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(path, "", "cannot replace file: " + ec.message());
  }
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
  r.fail(key, fmt::format("expected {}, found {} {}", expected, v.type_name(), v.dump()));
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
  if (v.is_number_integer()) return v.get<int64_t>();
  // 4096.0 is an integer written as a float; 40.5 is not.
  if (v.is_number_float() &&
      v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())))
    return static_cast<int64_t>(v.get<double>());
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
    fail(key, "unknown field", "accepted fields here: " + accepted);
  }
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
