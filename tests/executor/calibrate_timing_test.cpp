// The median the calibration keeps of its timed samples.
#include "executor/calibrate_timing.h"

#include <catch2/catch.hpp>

namespace shardplan {
namespace {

TEST_CASE("median of samples: the middle one, or the mean of the middle two", "[calibrate]") {
  CHECK(median({3e-6, 1e-6, 50e-6}) == 3e-6);  // one slow outlier does not move it
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({7}) == 7);
}

}  // namespace
}  // namespace shardplan
