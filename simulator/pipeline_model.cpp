#include "simulator/pipeline_model.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <map>
#include <numeric>
#include <vector>

#include "core/schedule.h"

namespace shardplan {

namespace {

// A rank's moments along its order (every F, counted with the micro-batch it starts, and every
// B, after which its chunk holds only what W reads), those no other moment holds as many of both
// at: the moments that can make the peak for any sizes of a whole chunk and a waiting one.
std::vector<HeldMicrobatches> order_moments(const std::vector<PipelineStep>& order) {
  std::vector<HeldMicrobatches> moments;
  HeldMicrobatches held;
  for (const PipelineStep& s : order) {
    if (s.pass == Pass::weight_grad) {
      --held.waiting_weight_grad;
      continue;
    }
    if (s.pass == Pass::forward) {
      ++held.whole;
    } else {
      --held.whole;
      ++held.waiting_weight_grad;
    }
    const auto covers = [](const HeldMicrobatches& a, const HeldMicrobatches& b) {
      return a.whole >= b.whole && a.waiting_weight_grad >= b.waiting_weight_grad;
    };
    if (std::ranges::any_of(moments, [&](const auto& m) { return covers(m, held); })) continue;
    std::erase_if(moments, [&](const auto& m) { return covers(held, m); });
    moments.push_back(held);
  }
  return moments;
}

}  // namespace

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
  if (v_placement(l.schedule)) {
    int64_t most = 0;
    for (const HeldMicrobatches& h : split_backward_peaks(l, stage))
      most = std::max(most, h.whole + h.waiting_weight_grad);
    return most;
  }
  if (splits_backward(l.schedule))
    return std::min<int64_t>(forwards_before_first_weight_grad(zero_bubble_phases(l, stage)), m);
  return std::min<int64_t>(l.pp - stage, m);
}

std::vector<HeldMicrobatches> split_backward_peaks(const Layout& l, int stage) {
  assert(stage >= 0 && stage < l.pp);
  if (v_placement(l.schedule)) {
    // Per rank, of the last few (pp, m) asked, per thread: the memory model asks each stage's of
    // every layout, the planner's inner loops over a few micro-batch sizes.
    constexpr size_t kKept = 32;
    thread_local std::map<std::pair<int, int>, std::vector<std::vector<HeldMicrobatches>>> kept;
    auto found = kept.find({l.pp, l.num_microbatches});
    if (found == kept.end()) {
      if (kept.size() >= kKept) kept.clear();
      std::vector<std::vector<HeldMicrobatches>> moments;
      for (const auto& order : zero_bubble_v_orders(l.pp, l.num_microbatches).ranks)
        moments.push_back(order_moments(order));
      found = kept.emplace(std::pair{l.pp, l.num_microbatches}, std::move(moments)).first;
    }
    return found->second[static_cast<size_t>(stage)];
  }
  const int64_t m = l.num_microbatches;
  const ZeroBubblePhases z = zero_bubble_phases(l, stage);
  const int64_t warmup = std::min<int64_t>(z.warmup, m);
  const int64_t pairs = std::min<int64_t>(z.pairs, m - warmup);  // pairs whose W wait
  // B-F pairs (ZB-H2): the last pair's F holds the warm-up's micro-batches whole and the pairs'
  // waiting; the B after it turns one more into waiting (there is always one: the pairs' B trail
  // their F).
  if (z.pair.front() == Pass::backward) return {{warmup, pairs}, {warmup - 1, pairs + 1}};
  // F-B pairs (ZB-H1): the steady state's first F, and the B after it.
  if (m > warmup + pairs) return {{warmup + 1, pairs}, {warmup, pairs + 1}};
  if (pairs > 0) return {{warmup + 1, pairs - 1}, {warmup, pairs}};
  return {{warmup, 0}};
}

namespace {

// ZB-V has no closed form: its order (core/schedule.h) is walked with each rank's F, B and W of a
// chunk half of the stage's, communication free, every pass starting when its rank is free and its
// input is there (F after the previous stage's F, B after the next stage's B).
double v_order_time_s(const Layout& l, std::span<const double> stage_time_s,
                      const SplitPasses& split) {
  const int pp = l.pp, stages = 2 * pp, m = l.num_microbatches;
  // Each rank's F, B and W of a chunk: half the stage's, its communication shared between F and
  // B by their compute.
  std::vector<std::array<double, 3>> chunk_s(static_cast<size_t>(pp));
  for (size_t i = 0; i < chunk_s.size(); ++i) {
    double f = split.forward_s[i] / 2, w = split.weight_grad_s[i] / 2;
    double b = stage_time_s[i] / 2 - f - w;
    if (!split.backward_s.empty() && split.backward_s[i] / 2 + f > 0) {
      const double comm = b - split.backward_s[i] / 2, share = f / (f + split.backward_s[i] / 2);
      f += share * comm;
      b -= share * comm;
    }
    chunk_s[i] = {f, b, w};
  }
  // In the order the steps placed them every pass finds the passes it waits for done.
  const ZeroBubbleVOrders& orders = zero_bubble_v_orders(pp, m);
  std::vector<double> f_end(static_cast<size_t>(stages) * m, 0), b_end = f_end;
  const auto at = [&](std::vector<double>& v, int vs, int mb) -> double& {
    return v[static_cast<size_t>(vs) * m + static_cast<size_t>(mb)];
  };
  std::vector<double> free_s(static_cast<size_t>(pp), 0);
  for (const auto& [r, position] : orders.placed) {
    const PipelineStep& s = orders.ranks[static_cast<size_t>(r)][static_cast<size_t>(position)];
    const int vs = virtual_stage(l, r, s.chunk);
    double& free = free_s[static_cast<size_t>(r)];
    const auto& [f, b, w] = chunk_s[static_cast<size_t>(r)];
    if (s.pass == Pass::forward) {
      if (vs > 0) free = std::max(free, at(f_end, vs - 1, s.micro_batch));
      at(f_end, vs, s.micro_batch) = free += f;
    } else if (s.pass == Pass::backward) {
      if (vs < stages - 1) free = std::max(free, at(b_end, vs + 1, s.micro_batch));
      at(b_end, vs, s.micro_batch) = free += b;
    } else {
      free += w;
    }
  }
  return *std::max_element(free_s.begin(), free_s.end());
}

}  // namespace

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
  if (v_placement(l.schedule)) return v_order_time_s(l, stage_time_s, split);
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
