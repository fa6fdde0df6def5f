// report/inputs.h: every output the report reads recognised by its keys, and an unknown JSON
// refused naming the file and the outputs it expected.
#include <catch2/catch.hpp>
#include <string>

#include "core/error.h"
#include "core/json_reader.h"
#include "report/inputs.h"

using namespace shardplan;
using report::InputKind;

namespace {

std::string demo_file(const std::string& name) {
  return std::string(SHARDPLAN_SOURCE_DIR) + "/tests/report/data/demo/" + name;
}

InputKind detect(const nlohmann::json& j) { return report::detect_input(j, "x.json"); }

}  // namespace

TEST_CASE("the recorded demo's files are recognised by their keys") {
  CHECK(detect(read_json_file(demo_file("demo.json"))) == InputKind::demo);
  CHECK(detect(read_json_file(demo_file("layout-1-plan.json"))) == InputKind::plan);
  CHECK(detect(read_json_file(demo_file("layout-2-compare.json"))) == InputKind::comparison);
  CHECK(detect(read_json_file(demo_file("layout-1-measured-trace.json"))) == InputKind::trace);
}

TEST_CASE("each output is told from the others that share keys with it") {
  const nlohmann::json memory = nlohmann::json::object();
  CHECK(detect({{"top", 1}, {"fitting", 1}, {"layouts", 1}}) == InputKind::search);
  CHECK(detect({{"step_time_s", 1}, {"memory", memory}, {"stages", 1}}) == InputKind::estimate);
  CHECK(detect({{"step_time_s", 1}, {"memory", memory}, {"ranks_per_program", 1}}) ==
        InputKind::simulation);
  CHECK(detect({{"rows", 1}, {"actions", 1}, {"memory", memory}}) == InputKind::comparison);
  CHECK(detect({{"rows", 1}, {"order", 1}}) == InputKind::demo);
  CHECK(detect({{"sets", 1}, {"error_definition", ""}}) == InputKind::validate);
  CHECK(detect({{"steps", 1}, {"ranks", 1}}) == InputKind::measurement);
  CHECK(detect(nlohmann::json::array({{{"set", "a"}, {"row", "rows[0]"}}})) ==
        InputKind::validate_rows);
  CHECK(report::input_kind_source(InputKind::validate_rows) == "validate --rows");
}

TEST_CASE("a JSON no subcommand writes is refused naming the file and what it found and expected") {
  try {
    report::detect_input({{"name", "x"}, {"value", 3}}, "mine.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.file == "mine.json");
    CHECK(e.reason == "not an output of a shardplan subcommand: found keys name, value");
    CHECK(e.hint.find("plan --json (top, fitting, layouts)") != std::string::npos);
  }
  CHECK_THROWS_AS(detect(nlohmann::json::array({1, 2})), InputError);
  CHECK_THROWS_AS(detect(3), InputError);
}
