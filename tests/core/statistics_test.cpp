// The order statistics of repeated measurements.
#include "core/statistics.h"

#include <catch2/catch.hpp>

namespace shardplan {
namespace {

TEST_CASE("median of samples: the middle one, or the mean of the middle two", "[statistics]") {
  CHECK(median({3e-6, 1e-6, 50e-6}) == 3e-6);  // one slow outlier does not move it
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({7}) == 7);
}

TEST_CASE("quantiles are linear between neighbours (Hyndman & Fan's definition 7)",
          "[statistics]") {
  CHECK(quantile({1, 2, 3, 4, 5}, 0.25) == 2);
  CHECK(quantile({4, 1, 3, 2}, 0.25) == 1.75);  // at 0.75 of the way from 1 to 2
  CHECK(quantile({4, 1, 3, 2}, 0.75) == 3.25);
  CHECK(quantile({4, 1, 3, 2}, 0) == 1);
  CHECK(quantile({4, 1, 3, 2}, 1) == 4);
}

}  // namespace
}  // namespace shardplan
