// Reading JSON as a hostile file would have it: nesting past any description of ours, a key twice
// in one object, numbers no double holds, empty keys and long values, each an InputError naming the
// file and the dotted path, never a crash or an internal error.
#include "core/json_reader.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "tests/core/thrown_input_error.h"

using namespace shardplan;
using shardplan::testing::thrown_input_error;

namespace {

InputError parse_error(const std::string& text) {
  return thrown_input_error([&] {
    std::istringstream in(text);
    parse_json(in, "test.json");
  });
}

}  // namespace

TEST_CASE("JSON nested past 64 levels is refused before any value is built", "[json]") {
  const std::string deep = std::string(70'000, '[') + std::string(70'000, ']');
  const InputError e = parse_error(deep);
  CHECK(e.file == "test.json");
  CHECK(e.reason == "nested deeper than 64 levels");
  std::istringstream ok(std::string(64, '[') + std::string(64, ']'));
  CHECK_NOTHROW(parse_json(ok, "test.json"));
}

TEST_CASE("a key twice in one object names its dotted path", "[json]") {
  InputError e = parse_error(R"({"hidden_size": 1, "hidden_size": 2})");
  CHECK(e.field == "hidden_size");
  CHECK(e.reason == "appears twice in its object");
  e = parse_error(R"({"levels": [{"name": "a"}, {"name": "b", "name": "c"}]})");
  CHECK(e.field == "levels[1].name");
  e = parse_error(R"({"a": {"b": [1, [2, {"c": 0, "c": 1}]]}})");
  CHECK(e.field == "a.b[1][1].c");
  // The same key in two objects is no duplicate.
  std::istringstream in(R"({"a": {"x": 1}, "b": {"x": 2}})");
  CHECK(parse_json(in, "test.json")["b"]["x"] == 2);
}

TEST_CASE("a number no double holds is an input error", "[json]") {
  const InputError e = parse_error(R"({"model": {"hidden_size": 1e999}})");
  CHECK(e.field == "model.hidden_size");
  CHECK(e.reason.find("number overflow") != std::string::npos);
  CHECK(parse_error(R"({"a": )").reason.find("invalid JSON") == 0);
}

TEST_CASE("errors show a long value as an excerpt, and an empty key as \"\"", "[json]") {
  const nlohmann::json j = {{"name", std::string(5000, 'x')}, {"", 1}};
  ObjectReader r(j, "test.json");
  const InputError wrong = thrown_input_error([&] { r.number("name"); });
  CHECK(wrong.reason.size() < 200);
  CHECK(wrong.reason.find("(5002 characters)") != std::string::npos);
  ObjectReader unknown(j, "test.json");
  unknown.ignore({"name"});
  const InputError empty = thrown_input_error([&] { unknown.reject_unknown(); });
  CHECK(empty.field == "\"\"");
  CHECK(empty.reason == "unknown field (an empty key)");
}

TEST_CASE("a positive figure too small to measure is refused", "[json]") {
  const nlohmann::json j = {{"elements_per_s", 1e-310}, {"tflops", 1e-300}};
  ObjectReader r(j, "profile.json");
  const InputError tiny = thrown_input_error([&] { r.positive_number("elements_per_s"); });
  CHECK(tiny.field == "elements_per_s");
  CHECK_THAT(tiny.reason, Catch::Contains("too small"));
  CHECK(r.positive_number("tflops") == 1e-300);
}

// Found by tests/fuzz (fuzz_model): "hidden_size": 1e126 was cast to int64_t, which is undefined.
TEST_CASE("an integer past 64 bits is refused, written as a float or as an unsigned", "[json]") {
  std::istringstream in(R"({"float": 1e126, "negative": -1e19, "unsigned": 9223372036854775808,
                            "top": 9223372036854775807, "whole": 4096.0})");
  const nlohmann::json j = parse_json(in, "model.json");
  ObjectReader r(j, "model.json");
  for (const char* key : {"float", "negative", "unsigned"}) {
    const InputError e = thrown_input_error([&] { r.integer(key); });
    CHECK(e.field == key);
    CHECK_THAT(e.reason, Catch::Contains("outside the range of a 64-bit integer"));
  }
  CHECK(r.integer("top") == 9223372036854775807);
  CHECK(r.integer("whole") == 4096);
}
