// The per-rank step programs: pipeline orders against the papers and Megatron-LM, and the
// collectives and transfers of a program counted against hand computation (the data-parallel
// reductions and gathers: schedule_data_parallel_test.cpp).
#include "core/schedule.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/presets.h"
#include "tests/core/layout_fixtures.h"
#include "tests/core/schedule_fixtures.h"
#include "tests/core/thrown_input_error.h"

namespace shardplan {
namespace {

using test::count;
using test::layout;
using test::small_gpt;
using test::small_moe;
using test::small_training;

PipelineStep F(int mb, int chunk = 0) {
  return {Pass::forward, mb, chunk};
}
PipelineStep B(int mb, int chunk = 0) {
  return {Pass::backward, mb, chunk};
}
PipelineStep W(int mb) {
  return {Pass::weight_grad, mb, 0};
}

auto collective(Pass pass, Group g, Collective op) {
  return [=](const Action& a) {
    return a.kind == ActionKind::collective && a.pass == pass && a.group == g && a.op == op;
  };
}

}  // namespace

TEST_CASE("1F1B: warm-up of pp − stage − 1 forwards, steady 1F1B, cool-down", "[schedule]") {
  const Layout l = layout(1, 1, 2, 3);
  CHECK(pipeline_order(l, 0) == std::vector{F(0), F(1), B(0), F(2), B(1), B(2)});
  CHECK(pipeline_order(l, 1) == std::vector{F(0), B(0), F(1), B(1), F(2), B(2)});
  const Layout deep = layout(1, 1, 4, 3);  // fewer micro-batches than stages: all warm-up
  CHECK(pipeline_order(deep, 0) == std::vector{F(0), F(1), F(2), B(0), B(1), B(2)});
  CHECK(pipeline_order(deep, 2) == std::vector{F(0), F(1), B(0), F(2), B(1), B(2)});
}

TEST_CASE("GPipe runs every forward, then every backward", "[schedule]") {
  const Layout l = layout(1, 1, 2, 3, Schedule::gpipe);
  for (int stage : {0, 1})
    CHECK(pipeline_order(l, stage) == std::vector{F(0), F(1), F(2), B(0), B(1), B(2)});
}

TEST_CASE("interleaved 1F1B follows Megatron-LM's chunk order and warm-up", "[schedule]") {
  // pp=2, vpp=2, m=4. Rank 0 warms up 2(2−0−1) + (2−1)·2 = 4 passes, rank 1 warms up 2; the k-th
  // forward is chunk (k mod 4)/2 of micro-batch (k/4)·2 + k mod 2, backwards take chunks reversed.
  const Layout l = layout(1, 1, 2, 4, Schedule::interleaved, 2);
  CHECK(pipeline_order(l, 0) == std::vector{F(0, 0), F(1, 0), F(0, 1), F(1, 1),  // warm-up
                                            F(2, 0), B(0, 1), F(3, 0), B(1, 1),  // steady
                                            F(2, 1), B(0, 0), F(3, 1), B(1, 0), B(2, 1), B(3, 1),
                                            B(2, 0), B(3, 0)});  // cool-down
  CHECK(pipeline_order(l, 1) == std::vector{F(0, 0), F(1, 0), F(0, 1), B(0, 1), F(1, 1), B(1, 1),
                                            F(2, 0), B(0, 0), F(3, 0), B(1, 0), F(2, 1), B(2, 1),
                                            F(3, 1), B(3, 1), B(2, 0), B(3, 0)});
  // num_microbatches == pp: Megatron runs every forward first.
  const Layout equal = layout(1, 1, 2, 2, Schedule::interleaved, 2);
  CHECK(pipeline_order(equal, 1) ==
        std::vector{F(0, 0), F(1, 0), F(0, 1), F(1, 1), B(0, 1), B(1, 1), B(0, 0), B(1, 0)});
}

TEST_CASE("ZB-H1: 1F1B's warm-up, stage F-B pairs whose W wait, then F-B-W, B-W, and the W left",
          "[schedule]") {
  // pp=4, m=6 (sail-sg/zero-bubble-pipeline-parallelism's ZeroBubbleH1Pipeline order).
  const Layout l = layout(1, 1, 4, 6, Schedule::zb_h1);
  CHECK(pipeline_order(l, 0) == std::vector{F(0), F(1), F(2), F(3), B(0), W(0), F(4), B(1), W(1),
                                            F(5), B(2), W(2), B(3), W(3), B(4), W(4), B(5), W(5)});
  CHECK(pipeline_order(l, 2) == std::vector{F(0), F(1), B(0), F(2), B(1), F(3), B(2), W(0), F(4),
                                            B(3), W(1), F(5), B(4), W(2), B(5), W(3), W(4), W(5)});
  CHECK(pipeline_order(l, 3) == std::vector{F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3), W(0),
                                            F(4), B(4), W(1), F(5), B(5), W(2), W(3), W(4), W(5)});
}

TEST_CASE("ZB-H2: 2(pp − stage) − 1 warm-up forwards, B-F pairs whose W wait, B-W-F, B-W, W",
          "[schedule]") {
  // Qi et al. 2024 Figure 3 (bottom), pp=4, m=8: the first stage runs F1–F7, B1 W1 F8, then B W;
  // the last F1 B1 … F7 B7, W1 F8 B8, then W2–W8 (one-based there).
  const Layout l = layout(1, 1, 4, 8, Schedule::zb_h2);
  CHECK(pipeline_order(l, 0) == std::vector{F(0), F(1), F(2), F(3), F(4), F(5), F(6), B(0),
                                            W(0), F(7), B(1), W(1), B(2), W(2), B(3), W(3),
                                            B(4), W(4), B(5), W(5), B(6), W(6), B(7), W(7)});
  CHECK(pipeline_order(l, 3) == std::vector{F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3),
                                            F(4), B(4), F(5), B(5), F(6), B(6), W(0), F(7),
                                            B(7), W(1), W(2), W(3), W(4), W(5), W(6), W(7)});
}

TEST_CASE("interleaving needs a multiple of pp micro-batches", "[schedule]") {
  const InputError e = testing::thrown_input_error(
      [] { pipeline_order(layout(1, 1, 4, 6, Schedule::interleaved, 2), 0); });
  CHECK(e.field == "layout.num_microbatches");
  CHECK(e.reason == "6 is not a multiple of pp=4, which the interleaved schedule needs");
}

TEST_CASE(
    "every pass runs once, after the one before it, 1F1B keeps pp − stage in flight, ZB-H1 pp, "
    "ZB-H2 2pp − 1, ZB-V 2pp chunks",
    "[schedule]") {
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::zb_h1,
                     Schedule::zb_h2, Schedule::zb_v})
    for (int pp : {1, 2, 4, 8})
      for (int m : {1, 3, 8, 16}) {
        const int vpp = s == Schedule::interleaved || v_placement(s) ? 2 : 1;
        if (s == Schedule::interleaved && m % pp != 0) continue;
        if (v_placement(s) && pp == 1) continue;
        const Layout l = layout(1, 1, pp, m, s, vpp);
        const bool split = splits_backward(s);
        for (int stage = 0; stage < pp; ++stage) {
          std::set<std::tuple<Pass, int, int>> seen;
          int in_flight = 0, peak = 0;
          for (const PipelineStep& step : pipeline_order(l, stage)) {
            CHECK(seen.insert({step.pass, step.micro_batch, step.chunk}).second);
            if (step.pass != Pass::forward) {
              const Pass before = step.pass == Pass::backward ? Pass::forward : Pass::backward;
              CHECK(seen.count({before, step.micro_batch, step.chunk}) == 1);
            }
            // A micro-batch holds its activations until its last pass.
            const Pass last = split ? Pass::weight_grad : Pass::backward;
            in_flight += step.forward() ? 1 : step.pass == last ? -1 : 0;
            peak = std::max(peak, in_flight);
          }
          CHECK(seen.size() == size_t((split ? 3 : 2) * m * vpp));
          if (s == Schedule::one_f_one_b) CHECK(peak == std::min(pp - stage, m));
          if (s == Schedule::gpipe) CHECK(peak == m);
          if (s == Schedule::zb_h1) CHECK(peak == std::min(pp, m));
          if (s == Schedule::zb_h2) CHECK(peak == std::min(2 * pp - 1, m));
          if (s == Schedule::zb_v) CHECK(peak <= 2 * pp);
        }
      }
}

TEST_CASE("ZB-V places a rank's chunks in a V: the first and last stage on rank 0", "[schedule]") {
  // Qi et al. 2024 §4: chunk 0 of rank r is stage r, chunk 1 stage 2pp − 1 − r; interleaving puts
  // chunk c at c·pp + r.
  for (int pp : {2, 4, 8}) {
    const Layout v = layout(1, 1, pp, 8, Schedule::zb_v, 2);
    const Layout interleaved = layout(1, 1, pp, 8, Schedule::interleaved, 2);
    for (int r = 0; r < pp; ++r) {
      CHECK(virtual_stage(v, r, 0) == r);
      CHECK(virtual_stage(v, r, 1) == 2 * pp - 1 - r);
      CHECK(virtual_stage(interleaved, r, 1) == pp + r);
      for (const Layout& l : {v, interleaved})
        for (int c : {0, 1}) CHECK(stage_slot(l, virtual_stage(l, r, c)) == StageSlot{r, c});
    }
    CHECK(last_stage_rank(v) == 0);
    CHECK(last_stage_rank(interleaved) == pp - 1);
  }
  // Rank pp − 1 hands its chunk 0's output to its chunk 1 with nothing sent, and rank 0 holds both
  // ends: two sends and two receives a micro-batch on each, four on the ranks between; no rank sums
  // a tied embedding with another.
  const Model m = small_gpt();
  const Layout l = layout(1, 1, 4, 8, Schedule::zb_v, 2);
  for (int r = 0; r < 4; ++r) {
    const Program p = build_program(m, small_training(), l, r);
    const int messages = count(p, [](const Action& a) {
      return a.kind == ActionKind::send || a.kind == ActionKind::recv;
    });
    CHECK(messages == 8 * (r == 0 || r == 3 ? 4 : 8));
    CHECK(p.embedding_group.empty());
  }
}

TEST_CASE("tensor parallelism: two all-reduces per layer each way, b·s·h each", "[schedule]") {
  // Shoeybi et al. 2019 §3: f and g give two all-reduces in the forward and two in the backward
  // of every layer; the vocab-parallel embedding adds one forward, the LM head one backward, and
  // its cross-entropy two forward of per-token fp32 statistics (Megatron-core's
  // VocabParallelCrossEntropy: row maxima, then target logits and sums of exponentials).
  const Model m = small_gpt();
  Layout l = layout(1, 2, 1, 3);
  l.micro_batch = 2;
  const Program p = build_program(m, small_training(), l, 0);
  const int layers = m.num_layers, mbs = 3;
  CHECK(count(p, collective(Pass::forward, Group::tp, Collective::all_reduce)) ==
        mbs * (2 * layers + 1 + 2));
  CHECK(count(p, collective(Pass::backward, Group::tp, Collective::all_reduce)) ==
        mbs * (2 * layers + 1));
  CHECK(count(p, [](const Action& a) {
          return a.kind == ActionKind::collective && a.op != Collective::all_reduce;
        }) == 0);
  std::vector<int64_t> loss_bytes;
  for (const Action& a : p.actions)
    if (is_loss_reduction(a))
      loss_bytes.push_back(a.bytes);
    else if (a.kind == ActionKind::collective)
      CHECK(a.bytes == 2 * 64 * 64 * 2);  // b · s · h · bf16
  CHECK(loss_bytes.size() == size_t{2 * mbs});
  for (size_t i = 0; i < loss_bytes.size(); i += 2) {
    CHECK(loss_bytes[i] == 2 * 64 * 4);          // b · s fp32 row maxima
    CHECK(loss_bytes[i + 1] == 2 * 2 * 64 * 4);  // and twice that
  }
  // Compute splits at the collectives: attention (norm+qkv+core), then mlp (norm+mlp), and going
  // backward the input norm after the last all-reduce.
  const auto& first_layer = std::find_if(p.actions.begin(), p.actions.end(), [](const Action& a) {
    return a.kind == ActionKind::compute && a.layer_begin == 0 && a.layer_end == 1;
  });
  CHECK(parts_name(first_layer->parts) == "attention_norm+attention_qkv+attention_core");
  CHECK(parts_name(first_layer[1].parts) == "attention_core");  // the all-reduce after it
  CHECK(first_layer[1].kind == ActionKind::collective);
  CHECK(parts_name(first_layer[2].parts) == "mlp_norm+mlp");
  const auto& last_backward =
      std::find_if(p.actions.rbegin(), p.actions.rend(), [](const Action& a) {
        return a.kind == ActionKind::compute && a.pass == Pass::backward && a.layer_begin == 0 &&
               a.layer_end == 1;
      });
  CHECK(parts_name(last_backward->parts) == "attention_norm");
  CHECK(last_backward[1].kind == ActionKind::collective);  // the all-reduce before it
  CHECK(parts_name(last_backward[2].parts) == "attention_qkv+attention_core+mlp_norm");
}

TEST_CASE("sequence parallelism: four all-gathers and four reduce-scatters per layer",
          "[schedule]") {
  // Korthikanti et al. 2022 §4.2.2, per layer and micro-batch: 2 AG + 2 RS forward, 2 AG + 2 RS
  // backward, a backward AG carrying the layer's saved input with its output gradient (twice
  // b·s·h). Embedding: RS forward, AG backward; head: AG forward, AG of its saved input and RS
  // backward; its cross-entropy's two all-reduces forward.
  const Model m = small_gpt();
  Layout l = layout(1, 4, 1, 2);
  l.sequence_parallel = true;
  const Program p = build_program(m, small_training(), l, 1);
  const int per_pass = 2 * m.num_layers + 1, mbs = 2;
  for (Pass pass : {Pass::forward, Pass::backward}) {
    CHECK(count(p, collective(pass, Group::tp, Collective::all_gather)) ==
          mbs * (per_pass + (pass == Pass::backward ? 1 : 0)));
    CHECK(count(p, collective(pass, Group::tp, Collective::reduce_scatter)) == mbs * per_pass);
  }
  CHECK(count(p, collective(Pass::forward, Group::tp, Collective::all_reduce)) == 2 * mbs);
  const int64_t act_bytes = 64 * 64 * 2;  // b · s · h · bf16
  for (const Action& a : p.actions)
    if (a.kind == ActionKind::collective && a.op == Collective::all_gather) {
      const bool layer_backward = a.pass == Pass::backward && a.layer_end > a.layer_begin;
      CHECK(a.bytes == (layer_backward ? 2 : 1) * act_bytes);
    }
  // The tp-replicated tensors' gradients, all-reduced over tp once: two norms per layer plus the
  // final one, weight and bias each (LayerNorm); each layer's two row-parallel biases; the
  // learned positions (max_seq × h).
  const auto norm = std::find_if(p.actions.begin(), p.actions.end(), [](const Action& a) {
    return a.kind == ActionKind::grad_reduce && a.group == Group::tp;
  });
  REQUIRE(norm != p.actions.end());
  CHECK(norm->params == (2 * m.num_layers + 1) * 2 * m.hidden + m.num_layers * 2 * m.hidden +
                          m.max_seq * m.hidden);
}

TEST_CASE("FP8 linears gather their sequence-parallel inputs in FP8, the head in the dtype",
          "[schedule]") {
  // Transformer Engine quantizes a linear's input (and, going backward, the output gradient)
  // before it gathers it: one byte an element; the LM head is no TE module.
  const Model m = small_gpt();
  Layout l = layout(1, 4, 1, 2);
  l.sequence_parallel = true;
  Training t = small_training();
  t.fp8 = Fp8Recipe::delayed;
  const Program p = build_program(m, t, l, 1);
  const int64_t tokens_h = 64 * 64;  // b · s · h
  int layer_gathers = 0;
  for (const Action& a : p.actions)
    if (a.kind == ActionKind::collective && a.op == Collective::all_gather) {
      const bool layer = a.layer_end > a.layer_begin;
      layer_gathers += layer ? 1 : 0;
      const int tensors = layer && a.pass == Pass::backward ? 2 : 1;
      CHECK(a.bytes == tensors * tokens_h * (layer ? 1 : 2));
    }
  CHECK(layer_gathers == 2 * 2 * 2 * m.num_layers);  // two a pass, two passes, two micro-batches
}

TEST_CASE("full recomputation re-runs each layer's forward before its backward", "[schedule]") {
  const Model m = small_gpt();
  Layout l = layout(1, 2, 1, 1);
  l.recompute = Recompute::full;
  const Program p = build_program(m, small_training(), l, 0);
  // Recompute of a layer: its compute and its two tp all-reduces, right before its backward.
  CHECK(count(p, collective(Pass::recompute, Group::tp, Collective::all_reduce)) ==
        2 * m.num_layers);
  for (size_t i = 0; i + 1 < p.actions.size(); ++i) {
    const Action& a = p.actions[i];
    if (a.kind == ActionKind::compute && a.pass == Pass::recompute &&
        has_part(a.parts, Part::mlp)) {
      CHECK(p.actions[i + 1].pass == Pass::recompute);  // the all-reduce closing the recompute
      CHECK(p.actions[i + 2].pass == Pass::backward);
      CHECK(p.actions[i + 2].layer_begin == a.layer_begin);
    }
  }
}

TEST_CASE("context parallelism gathers K and V, and reduce-scatters their gradients",
          "[schedule]") {
  const Model m = small_gpt();
  Layout l = layout(1, 1, 1, 1);
  l.cp = 2;
  const Program p = build_program(m, small_training(), l, 0);
  CHECK(count(p, collective(Pass::forward, Group::cp, Collective::all_gather)) == m.num_layers);
  CHECK(count(p, collective(Pass::backward, Group::cp, Collective::all_gather)) == m.num_layers);
  CHECK(count(p, collective(Pass::backward, Group::cp, Collective::reduce_scatter)) ==
        m.num_layers);
  for (const Action& a : p.actions)
    if (a.kind == ActionKind::collective)
      CHECK(a.bytes == 2 * 1 * 64 * 8 * 8 * 2);  // 2·b·s·kv·d·bf16
}

TEST_CASE("expert parallelism: dispatch and combine all-to-alls in every MoE layer", "[schedule]") {
  const Model m = small_moe();  // experts in layers 1, 3, ..., 15
  Layout l = layout(2, 1, 1, 1);
  l.ep = 2;
  const Program p = build_program(m, small_training(), l, 0);
  const int moe_layers = m.num_moe_layers();
  REQUIRE(moe_layers == 8);
  for (Pass pass : {Pass::forward, Pass::backward})
    CHECK(count(p, collective(pass, Group::ep, Collective::all_to_all)) == 2 * moe_layers);
  for (const Action& a : p.actions)
    if (a.kind == ActionKind::collective) CHECK(a.bytes == 64 * 2 * 64 * 2);  // tokens·top_k·h·bf16
  // Expert gradients are reduced over expert_dp (dp / ep = 1 here: none), dense ones over dp.
  CHECK(count(p, [](const Action& a) {
          return a.kind == ActionKind::grad_reduce && a.group == Group::expert_dp;
        }) == 0);
  CHECK(count(p, [](const Action& a) {
          return a.kind == ActionKind::grad_reduce && a.group == Group::dp;
        }) == 1);
}

TEST_CASE("pipeline transfers pair up: same tag, size and peer on both sides", "[schedule]") {
  const Model m = small_gpt();
  for (Schedule s : {Schedule::one_f_one_b, Schedule::interleaved}) {
    Layout l = layout(1, 2, 4, 8, s, s == Schedule::interleaved ? 2 : 1);
    l.sequence_parallel = true;
    std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> sends, recvs;
    for (int64_t rank = 0; rank < l.world(); ++rank) {
      const Program p = build_program(m, small_training(), l, rank);
      for (const Action& a : p.actions) {
        if (a.kind == ActionKind::send)
          CHECK(sends.insert({{rank, a.peer, a.tag}, a.bytes}).second);
        if (a.kind == ActionKind::recv)
          CHECK(recvs.insert({{a.peer, rank, a.tag}, a.bytes}).second);
      }
    }
    CHECK(sends == recvs);
    // Megatron-LM's (s/cp/tp, b, h) under SP: 64/2 · 1 · 64 · 2 bytes, 2·m per stage boundary.
    for (const auto& [key, bytes] : sends) CHECK(bytes == 32 * 64 * 2);
    CHECK(sends.size() == size_t(2 * 8 * (4 * l.vpp - 1) * 2));
  }
}

TEST_CASE("programs are in topological order with activations allocated and freed once",
          "[schedule]") {
  for (const Layout& l :
       test::sweep_layouts(Schedule::interleaved, 2, [](int pp) { return std::vector{pp}; })) {
    const Program p = build_program(small_moe(), small_training(), l, l.world() - 1);
    int allocs = 0, frees = 0;
    for (size_t i = 0; i < p.actions.size(); ++i) {
      for (uint32_t d : p.deps_of(p.actions[i])) CHECK(d < i);
      allocs += (p.actions[i].flags & kAllocatesActivations) ? 1 : 0;
      frees += (p.actions[i].flags & kFreesActivations) ? 1 : 0;
    }
    CHECK(allocs == l.num_microbatches * l.vpp);
    CHECK(frees == allocs);
  }
}

TEST_CASE("symmetry keeps one program per pipeline stage", "[schedule]") {
  Layout l = layout(4, 2, 4, 4);
  const StepPrograms s = build_step(small_gpt(), small_training(), l, true);
  REQUIRE(s.programs.size() == 4);
  CHECK(s.ranks_per_program == 8);
  for (int stage = 0; stage < 4; ++stage) {
    CHECK(s.programs[stage].coord.pp == stage);
    CHECK(s.programs[stage].coord.tp == 0);
    CHECK(s.programs[stage].coord.dp == 0);
  }
  CHECK(build_step(small_gpt(), small_training(), l, false).programs.size() == 32);
}

TEST_CASE("action names carry kind, micro-batch and chunk", "[schedule]") {
  Action a;
  a.pass = Pass::forward;
  a.micro_batch = 3;
  a.chunk = 1;
  CHECK(action_name(a) == "forward mb3 c1");
  a.kind = ActionKind::recv;
  a.pass = Pass::backward;
  CHECK(action_name(a) == "recv gradient mb3 c1");
  a.kind = ActionKind::collective;
  a.group = Group::tp;
  a.op = Collective::reduce_scatter;
  CHECK(action_name(a) == "tp reduce_scatter mb3 c1");
  a.kind = ActionKind::grad_reduce;
  a.group = Group::pp;
  a.op = Collective::all_reduce;
  a.micro_batch = a.chunk = -1;
  CHECK(action_name(a) == "grad_reduce embedding all_reduce");
  a.kind = ActionKind::optimizer_step;
  CHECK(action_name(a) == "optimizer_step");
}

}  // namespace shardplan
