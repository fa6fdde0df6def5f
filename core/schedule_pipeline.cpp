// Pipeline orderings: which forward, backward or weight-gradient pass each pipeline rank runs next
// under GPipe, 1F1B, interleaved 1F1B, ZB-H1, ZB-H2 and ZB-V, and which layers each virtual stage
// holds and where.
#include <algorithm>
#include <array>
#include <cassert>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "core/schedule.h"

namespace shardplan {
namespace {

constexpr Pass F = Pass::forward, B = Pass::backward, W = Pass::weight_grad;

std::vector<PipelineStep> gpipe_order(int m) {
  std::vector<PipelineStep> order;
  for (int mb = 0; mb < m; ++mb) order.push_back({F, mb, 0});
  for (int mb = 0; mb < m; ++mb) order.push_back({B, mb, 0});
  return order;
}

// Narayanan et al. 2021 §2.2.1 (PipeDream-Flush): stage r runs pp − r − 1 warm-up forwards, then
// alternates one forward and one backward, then drains the remaining backwards.
std::vector<PipelineStep> one_f_one_b_order(int pp, int m, int pp_rank) {
  const int warmup = std::min(pp - pp_rank - 1, m);
  std::vector<PipelineStep> order;
  for (int mb = 0; mb < warmup; ++mb) order.push_back({F, mb, 0});  // warm-up
  for (int i = 0; i < m - warmup; ++i) {                            // steady 1F1B
    order.push_back({F, warmup + i, 0});
    order.push_back({B, i, 0});
  }
  for (int mb = m - warmup; mb < m; ++mb) order.push_back({B, mb, 0});  // cool-down
  return order;
}

// The zero-bubble order of zero_bubble_phases: the warm-up, the pairs, the steady three while
// forwards remain, then B, W and the W still waiting. Micro-batches run F, B and W in their own
// order.
std::vector<PipelineStep> zero_bubble_order(int m, const ZeroBubblePhases& z) {
  std::vector<PipelineStep> order;
  int f = 0, b = 0, w = 0;
  const auto next = [&](Pass pass) {
    int& done = pass == F ? f : pass == B ? b : w;
    order.push_back({pass, done++, 0});
  };
  for (int i = 0; i < z.warmup && f < m; ++i) next(F);
  for (int i = 0; i < z.pairs && f < m; ++i)
    for (Pass p : z.pair) next(p);
  while (f < m)
    for (Pass p : z.steady) next(p);
  while (b < m) next(B), next(W);
  while (w < m) next(W);
  return order;
}

// Narayanan et al. 2021 §2.2.2 as megatron/core/pipeline_parallel/schedules.py
// (forward_backward_pipelining_with_interleaving) runs it: the k-th forward (backward) on a rank
// belongs to chunk (k mod pp·v) / pp (reversed for backwards) and micro-batch
// (k / (pp·v))·pp + k mod pp; warm-up is 2(pp − r − 1) + (v − 1)·pp passes, or all of them when
// num_microbatches == pp.
std::vector<PipelineStep> interleaved_order(int pp, int v, int m, int pp_rank) {
  const int total = m * v;
  const int group = pp * v;
  auto step = [&](int k, bool forward) {
    const int chunk_in_group = (k % group) / pp;
    const int mb = (k / group) * pp + k % pp;
    return PipelineStep{forward ? F : B, mb, forward ? chunk_in_group : v - 1 - chunk_in_group};
  };
  const int warmup = m == pp ? total : std::min(2 * (pp - pp_rank - 1) + (v - 1) * pp, total);
  std::vector<PipelineStep> order;
  for (int k = 0; k < warmup; ++k) order.push_back(step(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(step(warmup + k, true));
    order.push_back(step(k, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(step(k, false));
  return order;
}

// ZB-V (Qi et al. 2024 §4) on V-placed chunks (v_placement), ordered as sail-sg/zero-bubble-
// pipeline-parallelism's zbv.py builds its schedule: every rank's passes laid out together in
// steps of one pass each (F, B and W of a chunk taken as equal, communication as free), each rank
// taking what is ready in the order B, chunk 1's F, chunk 0's F, W. A rank starts a micro-batch
// (chunk 0's F) only while its activations, with a place kept for chunk 1's F of every
// micro-batch it has started, stay within 2pp chunks: 1F1B's first stage's pp micro-batches, the
// memory the paper gives ZB-V. Chunk 1's F then always has room, B and W need none, so the order
// never waits on itself; W, last, fill what would be bubbles.
// The virtual stage of chunk `chunk` of pipeline rank `pp_rank` placed in a V (v_placement).
constexpr int v_stage(int pp, int pp_rank, int chunk) {
  return chunk == 0 ? pp_rank : 2 * pp - 1 - pp_rank;
}

ZeroBubbleVOrders build_zero_bubble_v_orders(int pp, int m) {
  const int stages = 2 * pp;
  constexpr int kNotYet = std::numeric_limits<int>::max();
  // Step at which each (virtual stage, micro-batch)'s F or B ended; visible from the next step.
  std::vector<int> f_end(static_cast<size_t>(stages) * m, kNotYet), b_end = f_end;
  const auto at = [&](std::vector<int>& v, int vs, int mb) -> int& {
    return v[static_cast<size_t>(vs) * m + static_cast<size_t>(mb)];
  };
  struct Rank {
    std::array<int, 2> forwards{}, backwards{};  // per chunk, micro-batches run
    int held = 0;                                // chunks run forward whose W has not run
    int reserved = 0;  // micro-batches started whose chunk 1 has not run forward
    std::deque<std::pair<int, int>> weight_grads;  // (chunk, micro-batch) waiting, oldest first
  };
  std::vector<Rank> ranks(static_cast<size_t>(pp));
  ZeroBubbleVOrders orders{std::vector<std::vector<PipelineStep>>(static_cast<size_t>(pp)), {}};
  const int64_t total = 6 * int64_t{pp} * m;
  orders.placed.reserve(static_cast<size_t>(total));
  for (int64_t placed = 0, step = 0; placed < total; ++step) {
    std::vector<std::pair<int, PipelineStep>> chosen;
    for (int r = 0; r < pp; ++r) {
      Rank& k = ranks[static_cast<size_t>(r)];
      const std::array<int, 2> vs = {v_stage(pp, r, 0), v_stage(pp, r, 1)};
      const auto ended = [&](std::vector<int>& v, int s, int mb) { return at(v, s, mb) < step; };
      const auto backward_ready = [&](int c) {
        const int mb = k.backwards[c];
        return mb < m && ended(f_end, vs[c], mb) &&
               (vs[c] == stages - 1 || ended(b_end, vs[c] + 1, mb));
      };
      std::optional<PipelineStep> pick;
      for (int c : {1, 0})
        if (backward_ready(c) && (!pick || k.backwards[c] < pick->micro_batch))
          pick = PipelineStep{B, k.backwards[c], c};
      if (!pick && k.forwards[1] < k.forwards[0] && ended(f_end, vs[1] - 1, k.forwards[1]))
        pick = PipelineStep{F, k.forwards[1], 1};
      if (!pick && k.forwards[0] < m && (r == 0 || ended(f_end, r - 1, k.forwards[0])) &&
          k.held + 2 + k.reserved <= stages)
        pick = PipelineStep{F, k.forwards[0], 0};
      if (!pick && !k.weight_grads.empty())
        pick = PipelineStep{W, k.weight_grads.front().second, k.weight_grads.front().first};
      if (pick) chosen.emplace_back(r, *pick);
    }
    if (chosen.empty())  // every rank waiting on another: the rules above never allow it
      throw std::logic_error("zb-v order: no rank can run a pass at step " + std::to_string(step));
    for (const auto& [r, s] : chosen) {
      Rank& k = ranks[static_cast<size_t>(r)];
      const int vs = v_stage(pp, r, s.chunk);
      if (s.pass == F) {
        ++k.forwards[s.chunk], ++k.held;
        k.reserved += s.chunk == 0 ? 1 : -1;
        at(f_end, vs, s.micro_batch) = static_cast<int>(step);
      } else if (s.pass == B) {
        ++k.backwards[s.chunk];
        k.weight_grads.emplace_back(s.chunk, s.micro_batch);
        at(b_end, vs, s.micro_batch) = static_cast<int>(step);
      } else {
        k.weight_grads.pop_front();
        --k.held;
      }
      auto& order = orders.ranks[static_cast<size_t>(r)];
      orders.placed.emplace_back(r, static_cast<int>(order.size()));
      order.push_back(s);
      ++placed;
    }
  }
  return orders;
}

}  // namespace

const ZeroBubbleVOrders& zero_bubble_v_orders(int pp, int m) {
  constexpr size_t kKept = 32;  // a shape's micro-batch sizes and a few shapes' more
  thread_local std::map<std::pair<int, int>, ZeroBubbleVOrders> kept;
  const auto found = kept.find({pp, m});
  if (found != kept.end()) return found->second;
  if (kept.size() >= kKept) kept.clear();
  return kept.emplace(std::pair{pp, m}, build_zero_bubble_v_orders(pp, m)).first->second;
}

// Qi et al. 2024 §3.1. ZB-H1 as sail-sg/zero-bubble-pipeline-parallelism's ZeroBubbleH1Pipeline
// orders it: 1F1B's warm-up; pp_rank F, B pairs whose W wait, which lets the stages after this one
// start their B sooner; F, B, W while forwards remain. ZB-H2 as its Figure 3 draws it:
// 2(pp − pp_rank) − 1 warm-up forwards, which fill the wait for the first B; 2·pp_rank pairs of a
// B and an F whose W wait; B, W, F while forwards remain; the W left are the tail of the
// parallelogram.
ZeroBubblePhases zero_bubble_phases(const Layout& l, int pp_rank) {
  assert(splits_backward(l.schedule) && !v_placement(l.schedule) && pp_rank >= 0 && pp_rank < l.pp);
  if (l.schedule == Schedule::zb_h2)
    return {2 * (l.pp - pp_rank) - 1, 2 * pp_rank, {B, F}, {B, W, F}};
  return {l.pp - pp_rank - 1, pp_rank, {F, B}, {F, B, W}};
}

int forwards_before_first_weight_grad(const ZeroBubblePhases& z) {
  return z.warmup + z.pairs + (z.steady.front() == F ? 1 : 0);
}

std::vector<PipelineStep> pipeline_order(const Layout& l, int pp_rank) {
  assert(pp_rank >= 0 && pp_rank < l.pp);
  if (l.schedule == Schedule::interleaved && l.vpp > 1) {
    if (l.num_microbatches % l.pp != 0)
      throw InputError("layout", "layout.num_microbatches",
                       std::to_string(l.num_microbatches) + " is not a multiple of pp=" +
                           std::to_string(l.pp) + ", which the interleaved schedule needs",
                       "choose a global batch giving a multiple of pp micro-batches");
    return interleaved_order(l.pp, l.vpp, l.num_microbatches, pp_rank);
  }
  if (v_placement(l.schedule)) {
    if (l.vpp != 2)
      throw InputError(
          "layout", "layout.vpp",
          "schedule=zb-v places two chunks per rank in a V, found vpp=" + std::to_string(l.vpp),
          "set vpp=2");
    return zero_bubble_v_orders(l.pp, l.num_microbatches).ranks[static_cast<size_t>(pp_rank)];
  }
  if (l.vpp > 1)
    throw InputError("layout", "layout.vpp",
                     "vpp=" + std::to_string(l.vpp) + " needs the interleaved schedule",
                     "set schedule=interleaved or vpp=1");
  // Interleaving one chunk per rank is 1F1B.
  if (l.schedule == Schedule::gpipe) return gpipe_order(l.num_microbatches);
  if (splits_backward(l.schedule))
    return zero_bubble_order(l.num_microbatches, zero_bubble_phases(l, pp_rank));
  return one_f_one_b_order(l.pp, l.num_microbatches, pp_rank);
}

int virtual_stage(const Layout& l, int pp_rank, int chunk) {
  if (v_placement(l.schedule)) return v_stage(l.pp, pp_rank, chunk);
  return chunk * l.pp + pp_rank;
}

int last_stage_rank(const Layout& l) {
  return stage_slot(l, l.pp * l.vpp - 1).pp_rank;
}

StageSlot stage_slot(const Layout& l, int vs) {
  assert(vs >= 0 && vs < l.pp * l.vpp);
  if (v_placement(l.schedule))
    return vs < l.pp ? StageSlot{vs, 0} : StageSlot{2 * l.pp - 1 - vs, 1};
  return {vs % l.pp, vs / l.pp};
}

LayerRange virtual_stage_layers(const Model& m, const Layout& l, int vs) {
  const int stages = l.pp * l.vpp;
  assert(vs >= 0 && vs < stages);
  if (l.stages.empty()) {
    assert(m.num_layers % stages == 0);
    const int per_stage = m.num_layers / stages;
    return {vs * per_stage, (vs + 1) * per_stage};
  }
  assert(std::ssize(l.stages) == stages);
  const auto end = l.stages.begin() + vs;
  const int begin = std::accumulate(l.stages.begin(), end, 0);
  return {begin, begin + *end};
}

}  // namespace shardplan
