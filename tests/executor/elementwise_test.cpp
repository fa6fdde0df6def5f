// The per-element math against values worked out from the papers' formulas, and each derivative
// against a central finite difference in double precision.
#include "executor/elementwise.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

using namespace shardplan;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
// Central difference (f(x+h) − f(x−h))/2h: truncation error O(h²) ≈ 1e-12 at h = 1e-6, rounding
// error ≈ 1e-16/1e-6 = 1e-10; hence the 1e-8 tolerance below.
double central_difference(const std::function<double(double)>& f, double x) {
  const double h = 1e-6;
  return (f(x + h) - f(x - h)) / (2 * h);
}
}  // namespace

TEST_CASE("gelu: tanh form values and derivative", "[executor]") {
  // 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) evaluated by hand (Python, double) at ±1 and 2.
  CHECK(ew::gelu(0.0) == 0.0);
  CHECK_THAT(ew::gelu(1.0), WithinRel(0.8411919906082768, 1e-14));
  CHECK_THAT(ew::gelu(-1.0), WithinRel(-0.15880800939172324, 1e-14));
  CHECK_THAT(ew::gelu(2.0), WithinRel(1.954597694087775, 1e-14));
  CHECK_THAT(ew::gelu(1.0f), WithinRel(0.8411919906082768, 1e-6));
  for (double x = -5; x <= 5; x += 0.25)
    CHECK_THAT(ew::gelu_grad(x),
               WithinAbs(central_difference([](double v) { return ew::gelu(v); }, x), 1e-8));
}

TEST_CASE("silu and swiglu derivatives", "[executor]") {
  CHECK_THAT(ew::silu(1.0), WithinRel(1.0 / (1.0 + std::exp(-1.0)), 1e-14));
  for (double x = -5; x <= 5; x += 0.25) {
    CHECK_THAT(ew::silu_grad(x),
               WithinAbs(central_difference([](double v) { return ew::silu(v); }, x), 1e-8));
    const double up = 0.7, dy = 1.3;
    CHECK_THAT(
        ew::swiglu_grad_gate(x, up, dy),
        WithinAbs(dy * central_difference([&](double g) { return ew::swiglu(g, up); }, x), 1e-8));
    CHECK_THAT(
        ew::swiglu_grad_up(x, dy),
        WithinAbs(dy * central_difference([&](double u) { return ew::swiglu(x, u); }, up), 1e-8));
  }
}

TEST_CASE("norm pieces: rstd and normalisation of a row", "[executor]") {
  // Row [1, 2, 3, 4]: mean 2.5, mean squared deviation 1.25, rstd = 1/√(1.25 + 1e-5).
  const double rstd = ew::norm_rstd(1.25, 1e-5);
  CHECK_THAT(rstd, WithinRel(0.894423613312618, 1e-14));
  CHECK_THAT(ew::norm_normalize(4.0, 2.5, rstd), WithinRel(1.5 * 0.894423613312618, 1e-14));
}

TEST_CASE("softmax and cross-entropy pieces", "[executor]") {
  // Logits [1, 2, 3], target 0: loss = log(e⁻² + e⁻¹ + 1) + 3 − 1.
  const double logits[3] = {1, 2, 3};
  double sum = 0;
  for (double l : logits) sum += ew::softmax_numerator(l, 3.0);
  CHECK_THAT(ew::cross_entropy_loss(3.0, sum, 1.0), WithinRel(2.4076059644443806, 1e-14));
  // The gradient of the loss with respect to a logit is p − [target], checked against a difference.
  const auto loss_of = [&](int j, double l_j) {
    double lg[3] = {1, 2, 3};
    lg[j] = l_j;
    double s = 0;
    for (double l : lg) s += std::exp(l);
    return std::log(s) - lg[0];
  };
  for (int j = 0; j < 3; ++j) {
    const double p = ew::softmax_numerator(logits[j], 3.0) / sum;
    CHECK_THAT(
        ew::cross_entropy_logit_grad(p, j == 0, 1.0),
        WithinAbs(central_difference([&](double v) { return loss_of(j, v); }, logits[j]), 1e-8));
  }
  // Softmax backward: dx_i = p_i(dp_i − Σ p_j dp_j); with dp = one-hot at 2, dx_2 = p_2(1 − p_2).
  const double p2 = ew::softmax_numerator(3.0, 3.0) / sum;
  CHECK_THAT(ew::softmax_input_grad(p2, 1.0, p2), WithinRel(p2 * (1 - p2), 1e-14));
}

TEST_CASE("adam: two steps of Algorithm 1 and one of AdamW, by hand", "[executor]") {
  // lr 0.1, β1 0.9, β2 0.999, ε 1e-8; θ0 = 1, g1 = 0.5, g2 = −0.25 (worked out in Python, double).
  float p = 1, m = 0, v = 0;
  ew::adam_update(p, 0.5f, m, v, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 1 - 0.9f, 1 - 0.999f);
  CHECK_THAT(p, WithinRel(0.900000002, 1e-6));
  CHECK_THAT(m, WithinRel(0.05, 1e-6));
  CHECK_THAT(v, WithinRel(0.00025, 1e-4));  // 1 − 0.999f is 0.001 to 5e-5 in float
  ew::adam_update(p, -0.25f, m, v, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 1 - 0.81f, 1 - 0.998001f);
  CHECK_THAT(p, WithinRel(0.8733662987078463, 1e-5));
  // AdamW: the decay λθ joins the step (Loshchilov & Hutter 2019, Algorithm 2, line 12).
  float q = 1, mq = 0, vq = 0;
  ew::adam_update(q, 0.5f, mq, vq, 0.1f, 0.9f, 0.999f, 1e-8f, 0.1f, 1 - 0.9f, 1 - 0.999f);
  CHECK_THAT(q, WithinRel(0.890000002, 1e-6));
}
