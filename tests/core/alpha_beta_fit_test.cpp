// The alpha-beta fit of a collective's size sweep, against synthetic sweeps with known answers.
#include "core/alpha_beta_fit.h"

#include <catch2/catch.hpp>
#include <vector>

namespace shardplan {
namespace {

TEST_CASE("alpha-beta fit recovers alpha and beta from an exact sweep", "[calibrate]") {
  const double alpha_s = 5e-6, beta = 1 / 2e9;  // 5 us, 2 GB/s
  std::vector<SizeTime> sweep;
  for (double bytes = 8; bytes <= 4 << 20; bytes *= 2)
    sweep.push_back({bytes, alpha_s + beta * bytes});
  const AlphaBeta f = fit_alpha_beta(sweep);
  CHECK(f.alpha_s == Approx(alpha_s).epsilon(1e-9));
  CHECK(f.beta_s_per_byte == Approx(beta).epsilon(1e-9));
  CHECK(max_relative_error(f, sweep) < 1e-9);
}

TEST_CASE("alpha-beta fit weighs every size by its relative error", "[calibrate]") {
  // Exact data plus one point 10% slow at the largest size: plain least squares would follow that
  // point; relative weighting leaves alpha near 1 us.
  std::vector<SizeTime> sweep;
  for (double bytes = 8; bytes <= 1 << 20; bytes *= 2) sweep.push_back({bytes, 1e-6 + bytes / 1e9});
  sweep.back().time_s *= 1.1;
  const AlphaBeta f = fit_alpha_beta(sweep);
  CHECK(f.alpha_s == Approx(1e-6).epsilon(0.02));
}

TEST_CASE("alpha-beta fit refits a negative alpha at zero", "[calibrate]") {
  // (1000 B, 1 us) and (2000 B, 3 us) lie on alpha = -1 us, beta = 2 ns/B. With alpha = 0 the
  // weighted problem gives beta = Σ s/t / Σ (s/t)² = (1e9 + 2e9/3) / (1e18 + 4e18/9) = 15/13 ns/B.
  const std::vector<SizeTime> sweep{{1000, 1e-6}, {2000, 3e-6}};
  const AlphaBeta f = fit_alpha_beta(sweep);
  CHECK(f.alpha_s == 0);
  CHECK(f.beta_s_per_byte == Approx(15.0 / 13.0 * 1e-9).epsilon(1e-12));
  // Worst point: the second, (3 − 2·15/13) / 3 = 3/13 too fast.
  CHECK(max_relative_error(f, sweep) == Approx(3.0 / 13.0).epsilon(1e-12));
}

}  // namespace
}  // namespace shardplan
