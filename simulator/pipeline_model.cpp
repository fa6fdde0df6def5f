#include "simulator/pipeline_model.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "core/schedule.h"

namespace shardplan {

bool runs_all_forwards_first(const Layout& l) {
  // megatron/core/pipeline_parallel/schedules.py: all_warmup_microbatches when
  // num_microbatches == pipeline_parallel_size.
  return l.schedule == Schedule::gpipe ||
         (l.schedule == Schedule::interleaved && l.num_microbatches == l.pp);
}

int64_t inflight_chunk_microbatches(const Layout& l, int stage) {
  assert(stage >= 0 && stage < l.pp);
  const int64_t m = l.num_microbatches;
  if (runs_all_forwards_first(l)) return m * l.vpp;
  if (l.schedule == Schedule::interleaved)
    return std::min<int64_t>(2 * (l.pp - stage - 1) + int64_t{l.vpp - 1} * l.pp + 1, m * l.vpp);
  if (splits_backward(l.schedule))
    return std::min<int64_t>(forwards_before_first_weight_grad(zero_bubble_phases(l, stage)), m);
  return std::min<int64_t>(l.pp - stage, m);
}

std::array<HeldMicrobatches, 2> split_backward_peaks(const Layout& l, int stage) {
  assert(stage >= 0 && stage < l.pp);
  const int64_t m = l.num_microbatches;
  const ZeroBubblePhases z = zero_bubble_phases(l, stage);
  const int64_t warmup = std::min<int64_t>(z.warmup, m);
  const int64_t pairs = std::min<int64_t>(z.pairs, m - warmup);  // pairs whose W wait
  // B-F pairs (ZB-H2): the last pair's F holds the warm-up's micro-batches whole and the pairs'
  // waiting; the B after it turns one more into waiting (there is always one: the pairs' B trail
  // their F).
  if (z.pair.front() == Pass::backward) return {{{warmup, pairs}, {warmup - 1, pairs + 1}}};
  // F-B pairs (ZB-H1): the steady state's first F, and the B after it.
  if (m > warmup + pairs) return {{{warmup + 1, pairs}, {warmup, pairs + 1}}};
  if (pairs > 0) return {{{warmup + 1, pairs - 1}, {warmup, pairs}}};
  return {{{warmup, 0}, {warmup, 0}}};
}

double pipeline_time_s(const Layout& l, std::span<const double> stage_time_s,
                       const SplitPasses& split) {
  assert(stage_time_s.size() == static_cast<size_t>(l.pp));
  const auto slowest = std::max_element(stage_time_s.begin(), stage_time_s.end());
  const double chunks = static_cast<double>(int64_t{l.num_microbatches} * l.vpp);
  if (!splits_backward(l.schedule)) {
    const double sum = std::accumulate(stage_time_s.begin(), stage_time_s.end(), 0.0);
    return ((chunks - 1) * *slowest + sum) / l.vpp;
  }
  assert(split.forward_s.size() == stage_time_s.size() &&
         split.weight_grad_s.size() == stage_time_s.size());
  // The share of the pp − 1 W that each stage postpones which a micro-batch is there to give;
  // under ZB-H2 the share of its pp − 1 further warm-up forwards, which fill with two W each.
  const double span = l.pp > 1 ? l.pp - 1 : 1;
  const double postponed = (std::min(l.num_microbatches, l.pp) - 1) / span;
  const double doubled = l.schedule == Schedule::zb_h2
                             ? std::clamp((l.num_microbatches - l.pp) / span, 0.0, 1.0)
                             : 0.0;
  double others = 0;
  for (size_t i = 0; i < stage_time_s.size(); ++i) {
    if (stage_time_s.begin() + static_cast<std::ptrdiff_t>(i) == slowest) continue;
    const double f = split.forward_s[i], w = split.weight_grad_s[i];
    const double f_b = stage_time_s[i] - w, b = f_b - f;
    const double one = std::max(0.0, std::min({w, f, b}));
    const double two = std::max(0.0, std::min({2 * w, 2 * f, b}));
    others += f_b - postponed * one - doubled * (two - one);
  }
  return chunks * *slowest + others;
}

double bubble_fraction(const Layout& l, std::span<const double> stage_time_s,
                       const SplitPasses& split) {
  const double total = pipeline_time_s(l, stage_time_s, split);
  if (total <= 0) return 0;
  const double slowest = *std::max_element(stage_time_s.begin(), stage_time_s.end());
  return 1 - l.num_microbatches * slowest / total;
}

}  // namespace shardplan
