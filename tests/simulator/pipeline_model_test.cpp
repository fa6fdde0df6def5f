#include "simulator/pipeline_model.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "core/schedule.h"

using namespace shardplan;

TEST_CASE("pipeline time and bubble in closed form", "[pipeline]") {
  Layout l;
  l.pp = 4;
  l.num_microbatches = 8;
  const std::vector<double> equal(4, 1.0);
  // 1F1B / GPipe: (m + p − 1)·T = 11, bubble (p − 1)/(m + p − 1) = 3/11 (Narayanan 2021 §2.2.1).
  CHECK(pipeline_time_s(l, equal) == Approx(11.0));
  CHECK(bubble_fraction(l, equal) == Approx(3.0 / 11));
  // Interleaved, v = 2: (m + (p − 1)/v)·T = 9.5, bubble (p − 1)/(m·v + p − 1) = 3/19 (§2.2.2).
  l.vpp = 2;
  l.schedule = Schedule::interleaved;
  CHECK(pipeline_time_s(l, equal) == Approx(9.5));
  CHECK(bubble_fraction(l, equal) == Approx(3.0 / 19));
  // Unequal stages: every micro-batch through the slowest, one through the others:
  // (m − 1)·2 + (1 + 2 + 1 + 1) = 19.
  l.vpp = 1;
  l.schedule = Schedule::one_f_one_b;
  const std::vector<double> unequal{1, 2, 1, 1};
  CHECK(pipeline_time_s(l, unequal) == Approx(19.0));
  CHECK(bubble_fraction(l, unequal) == Approx(1 - 16.0 / 19));
  // ZB-H1, equal stages of F + B + W = 1 + 2 + 1 and m ≥ p: m·T + (p − 1)(F + B − min(W, F, B))
  // = 8·4 + 3·(1 + 2 − 1) = 38, as the event simulator of its order gives; with F = B = W the
  // paper's (p − 1)(F + B − W) (Qi et al. 2024 §3.1). m < p: fewer W to postpone, m = 2 of p = 4:
  // 2·4 + 3·3 − 1·1 = 16.
  l.schedule = Schedule::zb_h1;
  const std::vector<double> t(4, 4.0), f(4, 1.0), w(4, 1.0);
  CHECK(pipeline_time_s(l, t, {f, w}) == Approx(38.0));
  CHECK(bubble_fraction(l, t, {f, w}) == Approx(1 - 32.0 / 38));
  const std::vector<double> thirds(4, 3.0);
  CHECK(pipeline_time_s(l, thirds, {f, f}) == Approx(8 * 3 + 3 * 1.0));
  l.num_microbatches = 2;
  CHECK(pipeline_time_s(l, t, {f, w}) == Approx(16.0));
  l.num_microbatches = 8;
  l.schedule = Schedule::one_f_one_b;
  // One stage: no bubble.
  l.pp = 1;
  const std::vector<double> one{2.0};
  CHECK(pipeline_time_s(l, one) == Approx(16.0));
  CHECK(bubble_fraction(l, one) == Approx(0.0).margin(1e-15));
}

TEST_CASE("ZB-H1's peaks: micro-batches held whole and waiting for their W", "[pipeline]") {
  // core/schedule.h's order, pp = 4: stage s runs pp − s − 1 forwards, then s F-B pairs whose W
  // wait, then F-B-W. m = 8: the first steady forward holds pp − s whole and s waiting, the B
  // after it one fewer whole and one more waiting.
  Layout l;
  l.pp = 4;
  l.num_microbatches = 8;
  l.schedule = Schedule::zb_h1;
  const auto peaks = [&](int stage) { return split_backward_peaks(l, stage); };
  CHECK(peaks(0)[0].whole == 4);
  CHECK(peaks(0)[0].waiting_weight_grad == 0);
  CHECK(peaks(3)[0].whole == 1);
  CHECK(peaks(3)[0].waiting_weight_grad == 3);
  CHECK(peaks(3)[1].whole == 0);
  CHECK(peaks(3)[1].waiting_weight_grad == 4);
  // m = 2 < pp: stage 3 runs F B F B and its W after (at the second F one whole, one waiting);
  // stage 0 two forwards, then B W B W.
  l.num_microbatches = 2;
  CHECK(peaks(3)[0].whole == 1);
  CHECK(peaks(3)[0].waiting_weight_grad == 1);
  CHECK(peaks(3)[1].waiting_weight_grad == 2);
  CHECK(peaks(0)[0].whole == 2);
  CHECK(peaks(0)[0].waiting_weight_grad == 0);
}

TEST_CASE("ZB-H1's, ZB-H2's and ZB-V's peaks are the worst moments of their orders", "[pipeline]") {
  // Walk core/schedule.h's order counting chunks held whole (F run, B not) and waiting for their W
  // (B run): whatever a chunk of each costs (whole ≥ waiting, W's inputs being part of what B
  // reads), the worst moment is one of those split_backward_peaks gives, and the most held at once
  // is inflight_chunk_microbatches.
  for (Schedule s : {Schedule::zb_h1, Schedule::zb_h2, Schedule::zb_v})
    for (int pp : {1, 2, 4, 8})
      for (int m : {1, 2, 3, 5, 8, 15, 16, 32}) {
        Layout l;
        l.pp = pp;
        l.num_microbatches = m;
        l.schedule = s;
        l.vpp = v_placement(s) ? 2 : 1;
        for (int stage = 0; stage < pp; ++stage) {
          const auto peaks = split_backward_peaks(l, stage);
          INFO("pp=" << pp << " m=" << m << " stage=" << stage << " " << int(s));
          int64_t most = 0;
          for (const HeldMicrobatches& h : peaks)
            most = std::max(most, h.whole + h.waiting_weight_grad);
          CHECK(most == inflight_chunk_microbatches(l, stage));
          for (double waiting : {0.0, 0.2, 0.5, 1.0}) {
            const auto bytes = [&](int64_t whole, int64_t waits) {
              return double(whole) + waiting * double(waits);
            };
            double worst = 0;
            int64_t whole = 0, waits = 0;
            for (const PipelineStep& p : pipeline_order(l, stage)) {
              if (p.pass == Pass::forward) ++whole;
              if (p.pass == Pass::backward) --whole, ++waits;
              if (p.pass == Pass::weight_grad) --waits;
              worst = std::max(worst, bytes(whole, waits));
            }
            double at_peaks = 0;
            for (const HeldMicrobatches& h : peaks)
              at_peaks = std::max(at_peaks, bytes(h.whole, h.waiting_weight_grad));
            CHECK(worst == Approx(at_peaks));
          }
        }
      }
}
