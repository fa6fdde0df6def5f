// The folded program is the program: over the schedule tests' sweep of every layout family (pp,
// vpp, tp with and without SP, cp, ep, every ZeRO stage, full recompute), dense and MoE, each
// distinct action of a rank's built program is one entry of its fold, counted as often as the
// program runs it, per micro-batch or per step.
#include "core/schedule_fold.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "core/schedule.h"
#include "tests/core/schedule_fixtures.h"

namespace shardplan {
namespace {

using test::small_gpt;
using test::small_moe;
using test::small_training;

// Whether `a` belongs to one micro-batch's passes in build_program: everything with a micro-batch
// but the reductions of ZeRO-0 and -1, which run once after the last backward.
bool in_microbatch(const Action& a, int zero) {
  if (a.micro_batch < 0) return false;
  return a.kind != ActionKind::grad_reduce || zero >= 2;
}

void check_fold(const Model& m, const Layout& l, int64_t rank, const Training& t = small_training()) {
  const Program p = build_program(m, t, l, rank);
  const std::vector<FoldedAction> folded = fold_program(m, t, l, rank);
  std::vector<int64_t> microbatch(folded.size(), 0), step(folded.size(), 0);
  for (const Action& a : p.actions) {
    const bool per_mb = in_microbatch(a, l.zero);
    size_t found = folded.size();
    for (size_t i = 0; i < folded.size(); ++i)
      if (same_priced_action(folded[i].action, a) && (folded[i].per_microbatch > 0) == per_mb)
        found = i;
    INFO(action_name(a) << " bytes " << a.bytes << " params " << a.params);
    REQUIRE(found < folded.size());
    (per_mb ? microbatch : step)[found] += 1;
  }
  for (size_t i = 0; i < folded.size(); ++i) {
    INFO(action_name(folded[i].action));
    CHECK(microbatch[i] == folded[i].per_microbatch * l.num_microbatches);
    CHECK(step[i] == folded[i].per_step);
  }
}

TEST_CASE("a folded program counts every action of the built program", "[schedule][fold]") {
  int checked = 0;
  for (const Model& m : {small_gpt(), small_moe()})
    for (auto [schedule, vpp] : {std::pair{Schedule::one_f_one_b, 1},
                                 std::pair{Schedule::gpipe, 1},
                                 std::pair{Schedule::interleaved, 2}})
      for (Layout l : test::sweep_layouts(schedule, vpp, [](int pp) {
             return std::vector<int>{pp, 2 * pp};
           })) {
        if (!m.is_moe()) l.ep = 1;
        if (schedule == Schedule::interleaved && l.pp == 1) continue;
        INFO(to_string(l) << " " << m.name);
        for (int stage = 0; stage < l.pp; ++stage) {
          RankCoord c;
          c.pp = stage;
          check_fold(m, l, rank_of(l, c));
          Training not_overlapped = small_training();
          not_overlapped.overlap_grad_reduce = false;
          not_overlapped.overlap_param_gather = false;
          check_fold(m, l, rank_of(l, c), not_overlapped);
          ++checked;
        }
      }
  CHECK(checked > 500);
}

TEST_CASE("a fold is as long as a layer's steps, not as the layers or micro-batches",
          "[schedule][fold]") {
  const Model m = small_gpt();
  Layout l = test::layout(2, 2, 1, 16);
  l.sequence_parallel = true;
  const std::vector<FoldedAction> folded = fold_program(m, small_training(), l, 0);
  const Program p = build_program(m, small_training(), l, 0);
  CHECK(folded.size() < 40);
  CHECK(p.actions.size() > 40 * folded.size());
}

// What the planner's cache of priced passes relies on (simulator/stage_timing.cpp): a rank whose
// chunks two splits give the same layers, MoE pattern included, folds the same passes under both.
TEST_CASE("splits that give a rank's chunks the same layers fold its passes alike",
          "[schedule][fold]") {
  int alike = 0, unlike = 0;
  for (const Model& m : {small_gpt(), small_moe()})
    for (auto [vpp, splits] :
         {std::pair{1, std::vector<std::vector<int>>{{}, {3, 4, 4, 5}, {4, 4, 5, 3}, {5, 4, 4, 3}}},
          std::pair{2, std::vector<std::vector<int>>{
                           {}, {1, 2, 2, 2, 2, 2, 2, 3}, {2, 2, 2, 2, 3, 2, 2, 1}}}}) {
      for (size_t a = 0; a < splits.size(); ++a)
        for (size_t b = a + 1; b < splits.size(); ++b) {
          Layout la = test::layout(1, 2, 4, 8,
                                   vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b, vpp);
          Layout lb = la;
          la.stages = splits[a];
          lb.stages = splits[b];
          for (int stage = 0; stage < la.pp; ++stage) {
            RankCoord c;
            c.pp = stage;
            const int64_t rank = rank_of(la, c);
            std::vector<int> key_a, key_b;
            passes_split_key(m, la, rank, key_a);
            passes_split_key(m, lb, rank, key_b);
            const std::vector<FoldedAction> fa = fold_passes(m, small_training(), la, rank);
            const std::vector<FoldedAction> fb = fold_passes(m, small_training(), lb, rank);
            const bool same_fold =
                fa.size() == fb.size() &&
                std::equal(fa.begin(), fa.end(), fb.begin(), [](const auto& x, const auto& y) {
                  return same_priced_action(x.action, y.action) && x.action.peer == y.action.peer &&
                         x.action.chunk == y.action.chunk && x.per_microbatch == y.per_microbatch &&
                         x.per_step == y.per_step;
                });
            INFO(m.name << " " << to_string(la) << " against " << to_string(lb) << ", stage "
                        << stage);
            // Different keys may still fold alike (an MoE chunk's phase need not change its
            // count of MoE layers): the key is what suffices.
            if (key_a == key_b) {
              CHECK(same_fold);
              ++alike;
            } else {
              ++unlike;
            }
          }
        }
    }
  CHECK(alike > 10);
  CHECK(unlike > 10);
}

}  // namespace
}  // namespace shardplan
