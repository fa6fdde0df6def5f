// Small models and layouts for the schedule and simulator tests: shapes that divide by every
// pp·vpp, tp and cp the tests sweep, and the layouts that sweep goes over.
#pragma once

#include <algorithm>
#include <iterator>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "core/schedule.h"
#include "core/training.h"

namespace shardplan::test {

// A GPT-2-shaped model (Radford et al. 2019: learned positions, LayerNorm, biases, tied
// embeddings) with 16 layers, so pp ∈ {1,2,4,8} with vpp 2 divide it, and 8 heads for tp ≤ 8.
inline Model small_gpt() {
  return Model{.name = "small-gpt",
               .num_layers = 16,
               .hidden = 64,
               .num_heads = 8,
               .num_kv_heads = 8,
               .head_dim = 8,
               .ffn_hidden = 256,
               .vocab = 256,
               .max_seq = 64,
               .activation = Activation::gelu,
               .norm = Norm::layernorm,
               .position_embedding = PositionEmbedding::learned,
               .tied_embeddings = true,
               .qkv_bias = true,
               .out_bias = true,
               .mlp_bias = true,
               .moe = {}};
}

// The same with experts in every other layer (Mixtral-style routing, top-2 of 8).
inline Model small_moe() {
  Model m = small_gpt();
  m.name = "small-moe";
  m.tied_embeddings = false;
  m.moe = Moe{.num_experts = 8, .top_k = 2, .expert_ffn_hidden = 128, .layer_freq = 2};
  return m;
}

// Actions in [first, last) matching `pred`.
template <class It, class Pred>
int count_in(It first, It last, Pred pred) {
  return static_cast<int>(std::count_if(first, last, pred));
}

// Actions of `p` matching `pred`.
template <class Pred>
int count(const Program& p, Pred pred) {
  return count_in(p.actions.begin(), p.actions.end(), pred);
}

// Actions of `p` matching `pred`, in program order.
template <class Pred>
std::vector<Action> actions_where(const Program& p, Pred pred) {
  std::vector<Action> out;
  std::copy_if(p.actions.begin(), p.actions.end(), std::back_inserter(out), pred);
  return out;
}

// The tests set each layout's num_microbatches directly; the global batch is not read.
inline Training small_training() {
  return Training{.global_batch = 1, .seq_len = 64};
}

inline Layout layout(int dp, int tp, int pp, int num_microbatches,
                     Schedule schedule = Schedule::one_f_one_b, int vpp = 1) {
  return Layout{.dp = dp,
                .tp = tp,
                .pp = pp,
                .num_microbatches = num_microbatches,
                .vpp = vpp,
                .schedule = schedule};
}

// Every combination of pp ∈ {1,2,4,8}, tp ∈ {1,2,4}, cp ∈ {1,2}, dp ∈ {1,2,4} up to 64 ranks,
// with ZeRO stage, sequence parallelism, expert parallelism and recomputation varied over them,
// each at the micro-batch counts `micro_batches(pp)`.
template <class MicroBatches>
std::vector<Layout> sweep_layouts(Schedule schedule, int vpp, MicroBatches micro_batches) {
  std::vector<Layout> out;
  int k = 0;
  for (int pp : {1, 2, 4, 8})
    for (int tp : {1, 2, 4})
      for (int cp : {1, 2})
        for (int dp : {1, 2, 4}) {
          if (int64_t{pp} * tp * cp * dp > 64) continue;
          for (int m : micro_batches(pp)) {
            Layout l = layout(dp, tp, pp, m, schedule, vpp);
            l.cp = cp;
            l.zero = k % 4;
            l.sequence_parallel = tp > 1 && k % 3 != 0;
            l.ep = dp % 2 == 0 && k % 2 == 0 ? 2 : 1;
            l.recompute = k % 5 == 0 ? Recompute::full : Recompute::none;
            out.push_back(l);
            ++k;
          }
        }
  return out;
}

}  // namespace shardplan::test
