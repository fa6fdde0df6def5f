#include "validate/scores.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace shardplan;

TEST_CASE("error statistics by hand", "[scores]") {
  // e = +10%, −20%, +30%, 0%: |e| = 10, 20, 30, 0 → mean 15, median (10 + 20) / 2 = 15, max 30,
  // signed mean (10 − 20 + 30 + 0) / 4 = 5.
  const ErrorStats s = error_stats({0.1, -0.2, 0.3, 0.0});
  CHECK(s.count == 4);
  CHECK(s.mape_pct == Approx(15));
  CHECK(s.median_abs_pct == Approx(15));
  CHECK(s.max_abs_pct == Approx(30));
  CHECK(s.signed_mean_pct == Approx(5));
  CHECK(error_stats({}).count == 0);
}

TEST_CASE("Spearman's rank correlation, with and without ties", "[scores]") {
  CHECK(*spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1));
  CHECK(*spearman({1, 2, 3, 4}, {40, 30, 20, 10}) == Approx(-1));
  // Ties: a = {1, 2, 2, 3} ranks {1, 2.5, 2.5, 4}; b = {1, 3, 2, 4} ranks {1, 3, 2, 4}.
  // Deviations from 2.5: a {−1.5, 0, 0, 1.5}, b {−1.5, 0.5, −0.5, 1.5}; cov = 2.25 + 2.25 = 4.5,
  // var a = 4.5, var b = 2.25 + 0.25 + 0.25 + 2.25 = 5; rho = 4.5 / sqrt(4.5 · 5) = 0.9487.
  CHECK(*spearman({1, 2, 2, 3}, {1, 3, 2, 4}) == Approx(4.5 / std::sqrt(22.5)));
  CHECK_FALSE(spearman({1}, {2}));
  CHECK_FALSE(spearman({1, 1, 1}, {1, 2, 3}));  // one side constant: no ranking
}

TEST_CASE("the planner's pick regret", "[scores]") {
  // Predicted fastest that fits is the second (1.0 s; the first is faster but predicted not to
  // fit); it measured 12 s against the best 10 s: regret 20%.
  const std::vector<GroupMember> group{{0.5, 11, false}, {1.0, 12, true}, {2.0, 10, true}};
  CHECK(*pick_regret(group) == Approx(0.2));
  CHECK(*pick_regret({{1, 10, true}, {2, 12, true}}) == Approx(0));
  CHECK_FALSE(pick_regret({{1, 10, false}}));
}

TEST_CASE("the fits-versus-crashed confusion matrix", "[scores]") {
  FitsConfusion c;
  c.add(true, true);
  c.add(true, true);
  c.add(true, false);   // false fits
  c.add(false, true);   // false "does not fit"
  c.add(false, false);
  CHECK(c.fits_ran == 2);
  CHECK(c.fits_crashed == 1);
  CHECK(c.no_fit_ran == 1);
  CHECK(c.no_fit_crashed == 1);
  CHECK(c.accuracy() == Approx(3.0 / 5));
  CHECK(FitsConfusion{}.accuracy() == 0);
}
