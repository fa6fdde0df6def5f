// What `shardplan report` reads: the JSON files the other subcommands write, each recognised by its
// keys (docs/conventions.md's Outputs), so that a user passes them in any order without naming them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan::report {

enum class InputKind {
  plan,           // plan --out: model, cluster, training, layout, prediction
  search,         // plan --json: the search's counts and top layouts
  estimate,       // estimate --json
  simulation,     // simulate --json
  trace,          // simulate/execute/compare --trace: Chrome trace JSON
  measurement,    // execute --out (measured.json)
  comparison,     // compare --json, and demo's layout-N-compare.json
  demo,           // demo --json
  validate,       // validate --json
  validate_rows,  // validate --rows
};

struct Input {
  std::string file;  // as given, for messages and the page's list of inputs
  InputKind kind;
  nlohmann::json json;
};

// Which subcommand wrote `j`; an InputError naming `file` and the outputs it knows where none fits.
InputKind detect_input(const nlohmann::json& j, const std::string& file);

// "plan --out", "simulate --trace", ...: what wrote an input of this kind.
std::string_view input_kind_source(InputKind kind);

// The inputs of one kind, in the order given.
std::vector<const Input*> inputs_of(const std::vector<Input>& inputs, InputKind kind);

}  // namespace shardplan::report
