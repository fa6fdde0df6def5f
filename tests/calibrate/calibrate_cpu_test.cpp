// What `calibrate --backend cpu` checks before measuring, and the group sizes it measures on.
#include <catch2/catch.hpp>
#include <string>

#include "calibrate/calibrate_options.h"
#include "core/json_reader.h"

namespace shardplan {
namespace {

Model preset(const std::string& name) {
  const std::string path = std::string(SHARDPLAN_SOURCE_DIR) + "/models/" + name + ".json";
  return model_from_json(read_json_file(path), path);
}

InputError options_error(const CalibrateOptions& o, int world) {
  try {
    validate_calibrate_options(o, world);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  throw;  // not reached: FAIL throws
}

TEST_CASE("calibrate: group sizes are powers of two up to the world, and the world",
          "[calibrate]") {
  CHECK(calibration_group_sizes(1).empty());
  CHECK(calibration_group_sizes(2) == std::vector<int>{2});
  CHECK(calibration_group_sizes(6) == std::vector<int>{2, 4, 6});
  CHECK(calibration_group_sizes(8) == std::vector<int>{2, 4, 8});
}

TEST_CASE("calibrate: options are checked against the models and the world", "[calibrate]") {
  CalibrateOptions o;
  o.models = {preset("gpt-tiny"), preset("gpt-small")};
  CHECK_NOTHROW(validate_calibrate_options(o, 2));
  o.tp = {1, 8};  // gpt-tiny has 4 heads
  const InputError tp = options_error(o, 2);
  CHECK(tp.file == "--tp");
  CHECK_THAT(tp.reason, Catch::Contains("8 does not divide gpt-tiny's num_attention_heads=4"));
  o.tp = {1, 2};
  o.sweep.max_bytes = 8;  // one size: nothing to fit a line to
  const InputError bytes = options_error(o, 2);
  CHECK(bytes.file == "--max-bytes");
  CHECK_THAT(bytes.reason, Catch::Contains("fewer than two sizes"));
  o.sweep.max_bytes = 32;  // 8, 16, 32 B: three counts of every collective on 2 ranks
  CHECK_NOTHROW(validate_calibrate_options(o, 2));
  CHECK_THROWS_AS(validate_calibrate_options(o, 8),
                  InputError);  // reduce_scatter on 8 ranks: 32 B per float each
}

}  // namespace
}  // namespace shardplan
