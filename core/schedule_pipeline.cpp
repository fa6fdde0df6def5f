// Pipeline orderings: which forward, backward or weight-gradient pass each pipeline rank runs next
// under GPipe, 1F1B, interleaved 1F1B, ZB-H1 and ZB-H2, and which layers each virtual stage holds.
#include <algorithm>
#include <cassert>
#include <numeric>
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

}  // namespace

// Qi et al. 2024 §3.1. ZB-H1 as sail-sg/zero-bubble-pipeline-parallelism's ZeroBubbleH1Pipeline
// orders it: 1F1B's warm-up; pp_rank F, B pairs whose W wait, which lets the stages after this one
// start their B sooner; F, B, W while forwards remain. ZB-H2 as its Figure 3 draws it:
// 2(pp − pp_rank) − 1 warm-up forwards, which fill the wait for the first B; 2·pp_rank pairs of a
// B and an F whose W wait; B, W, F while forwards remain; the W left are the tail of the
// parallelogram.
ZeroBubblePhases zero_bubble_phases(const Layout& l, int pp_rank) {
  assert(splits_backward(l.schedule) && pp_rank >= 0 && pp_rank < l.pp);
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
  return chunk * l.pp + pp_rank;
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
