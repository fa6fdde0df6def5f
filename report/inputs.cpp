#include "report/inputs.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <array>

#include "core/error.h"

namespace shardplan::report {
namespace {

// The keys that tell one output from the others, tried in order: the first kind whose keys are all
// present wins (simulate --json also carries step_time_s and memory, so it comes before estimate).
struct Signature {
  InputKind kind;
  std::string_view source;
  std::array<std::string_view, 4> keys;  // "" past the last
};
constexpr std::array<Signature, 9> kSignatures{{
    {InputKind::trace, "--trace", {"traceEvents"}},
    {InputKind::plan, "plan --out", {"model", "cluster", "training", "layout"}},
    {InputKind::search, "plan --json", {"top", "fitting", "layouts"}},
    {InputKind::demo, "demo --json", {"rows", "order"}},
    {InputKind::comparison, "compare --json", {"rows", "actions", "memory"}},
    {InputKind::validate, "validate --json", {"sets", "error_definition"}},
    {InputKind::measurement, "execute --out", {"steps", "ranks"}},
    {InputKind::simulation, "simulate --json", {"ranks_per_program", "step_time_s", "memory"}},
    {InputKind::estimate, "estimate --json", {"step_time_s", "memory", "stages"}},
}};
constexpr std::string_view kRowsSource = "validate --rows";

bool has_keys(const nlohmann::json& j, const std::array<std::string_view, 4>& keys) {
  for (std::string_view k : keys)
    if (!k.empty() && !j.contains(k)) return false;
  return true;
}

std::string key_list(const std::array<std::string_view, 4>& keys) {
  std::string out;
  for (std::string_view k : keys)
    if (!k.empty()) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::string expected_outputs() {
  std::string out;
  for (const Signature& s : kSignatures)
    out += fmt::format("{} ({}), ", s.source, key_list(s.keys));
  return out + std::string(kRowsSource) + " (an array of objects with set and row)";
}

std::string found(const nlohmann::json& j) {
  if (!j.is_object()) return fmt::format("found {}", j.type_name());
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  if (keys.size() > 8) keys.resize(8), keys.push_back("...");
  return keys.empty() ? "found an empty object" : fmt::format("found keys {}", fmt::join(keys, ", "));
}

}  // namespace

InputKind detect_input(const nlohmann::json& j, const std::string& file) {
  if (j.is_array() && !j.empty() && j.front().is_object() && has_keys(j.front(), {"set", "row"}))
    return InputKind::validate_rows;
  if (j.is_object())
    for (const Signature& s : kSignatures)
      if (has_keys(j, s.keys)) return s.kind;
  throw InputError(file, "", "not an output of a shardplan subcommand: " + found(j),
                   "report reads " + expected_outputs());
}

std::string_view input_kind_source(InputKind kind) {
  for (const Signature& s : kSignatures)
    if (s.kind == kind) return s.source;
  return kRowsSource;
}

std::vector<const Input*> inputs_of(const std::vector<Input>& inputs, InputKind kind) {
  std::vector<const Input*> out;
  for (const Input& in : inputs)
    if (in.kind == kind) out.push_back(&in);
  return out;
}

}  // namespace shardplan::report
