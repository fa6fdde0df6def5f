// The data-parallel side of the step programs (core/schedule_data_parallel.cpp): gradient
// reductions and ZeRO's parameter gathers, where each runs (with or beside the passes, as the
// framework overlaps them), its buckets, and the tied embedding's reduction.
#include <algorithm>
#include <catch2/catch.hpp>

#include "core/presets.h"
#include "core/schedule.h"
#include "tests/core/layout_fixtures.h"
#include "tests/core/schedule_fixtures.h"

namespace shardplan {
namespace {

using test::actions_where;
using test::count;
using test::count_in;
using test::layout;
using test::small_gpt;
using test::small_training;

// Rank 0's program of Llama 3 8B over dp 2 and pp 2, 4 micro-batches, under ZeRO `zero`: as the
// default training runs it (everything overlapped), and as `t` does.
std::pair<Program, Program> overlapped_and(const Training& t, int zero) {
  const Model m = load_model("llama3-8b");
  Layout l = layout(2, 1, 2, 4);
  l.zero = zero;
  return {build_program(m, small_training(), l, 0), build_program(m, t, l, 0)};
}

}  // namespace

TEST_CASE("data-parallel reduction: once after the last backward, or every one under ZeRO-2/3",
          "[schedule]") {
  const Model m = small_gpt();  // 0.8M parameters: a single Megatron bucket
  const int64_t total = count_parameters(m).total();
  auto reductions = [&](int zero) {
    Layout l = layout(2, 1, 1, 4);
    l.zero = zero;
    const Program p = build_program(m, small_training(), l, 0);
    return std::pair{p, actions_where(p, [](const Action& a) {
                       return a.kind == ActionKind::grad_reduce;
                     })};
  };
  {
    const auto [p, r] = reductions(0);
    REQUIRE(r.size() == 1);
    CHECK(r[0].op == Collective::all_reduce);
    CHECK(r[0].micro_batch == 3);
    CHECK(r[0].params == total);
    CHECK(r[0].bytes == 2 * total);
    CHECK(p.actions.back().kind == ActionKind::optimizer_step);
    CHECK(p.actions.back().params == total);
  }
  {
    const auto [p, r] = reductions(1);
    REQUIRE(r.size() == 1);
    CHECK(r[0].op == Collective::reduce_scatter);
    CHECK(p.actions.back().params == (total + 1) / 2);
    // The parameters updated last step are gathered at the start, before their first use.
    CHECK(p.actions.front().kind == ActionKind::param_gather);
    CHECK(p.actions.front().params == total);
  }
  CHECK(reductions(2).second.size() == 4);  // one per micro-batch
  // A bucket of every layer was mostly written long before its reduction; a ZeRO-3 unit's, by the
  // backward just before it.
  CHECK(reads_cold_input(reductions(0).second[0]));
  CHECK(reads_cold_input(reductions(2).second[0]));
  // ZeRO-3: every unit (embedding, 16 layers, head) reduced after each backward and gathered
  // before each forward and each backward.
  const auto [p3, r3] = reductions(3);
  CHECK(r3.size() == size_t(4 * (m.num_layers + 2)));
  for (const Action& a : r3) CHECK_FALSE(reads_cold_input(a));
  for (const Action& a : p3.actions)
    if (a.kind == ActionKind::param_gather) CHECK(reads_cold_input(a));
  CHECK(count(p3, [](const Action& a) { return a.kind == ActionKind::param_gather; }) ==
        2 * 4 * (m.num_layers + 2));
  // The head uses the tied word embedding: its gather brings it along with the final norm.
  const auto head = std::find_if(p3.actions.begin(), p3.actions.end(), [](const Action& a) {
    return a.kind == ActionKind::param_gather && has_part(a.parts, Part::head);
  });
  REQUIRE(head != p3.actions.end());
  CHECK(head->params == 2 * m.hidden + m.vocab * m.hidden);
  CHECK(parts_name(head->parts) == "embedding+head_norm+head");
  // And the reduction after the head's backward reduce-scatters the embedding's gradients too.
  for (const Action& a : r3)
    if (has_part(a.parts, Part::head)) {
      CHECK(a.params == head->params);
      CHECK(parts_name(a.parts) == "embedding+head_norm+head");
    }
}

TEST_CASE("a framework that does not overlap the reduction runs it after the whole backward",
          "[schedule]") {
  Training t = small_training();
  t.overlap_grad_reduce = false;
  for (int zero : {0, 1}) {
    const auto [overlapped, p] = overlapped_and(t, zero);
    INFO("zero " << zero);
    // The same reductions, every one on the compute stream after the last compute action.
    const auto data_parallel = [](const Action& a) {
      return a.kind == ActionKind::grad_reduce && a.group != Group::pp;
    };
    const std::vector<Action> before = actions_where(overlapped, data_parallel),
                              after = actions_where(p, data_parallel);
    const auto last_compute =
        std::find_if(p.actions.rbegin(), p.actions.rend(), [](const Action& a) {
          return a.kind == ActionKind::compute;
        }).base();
    for (const Action& a : after) CHECK(a.stream == Stream::compute);
    CHECK(count_in(last_compute, p.actions.end(), data_parallel) ==
          static_cast<int>(after.size()));
    REQUIRE(before.size() > 1);
    REQUIRE(after.size() == before.size());
    for (const Action& a : before) {
      CHECK(a.stream == Stream::dp_comm);
      CHECK(std::count_if(after.begin(), after.end(), [&](const Action& b) {
              return b.bytes == a.bytes && b.params == a.params && b.layer_begin == a.layer_begin;
            }) == 1);
    }
    CHECK(p.actions.back().kind == ActionKind::optimizer_step);
  }
  // ZeRO-2 and -3 reduce within every backward whatever the framework says.
  Layout l = layout(2, 1, 1, 4);
  l.zero = 2;
  for (const Action& a : build_program(load_model("llama3-8b"), t, l, 0).actions)
    if (a.kind == ActionKind::grad_reduce) CHECK(a.stream == Stream::dp_comm);
}

TEST_CASE("a framework that gathers the updated parameters whole runs them before the forward",
          "[schedule]") {
  Training t = small_training();
  t.overlap_param_gather = false;
  for (int zero : {1, 2}) {
    const auto [overlapped, p] = overlapped_and(t, zero);
    INFO("zero " << zero);
    // The same gathers, each on the compute stream ahead of the first compute action instead of
    // on the zero-comm stream beside the forward.
    const auto gather = [](const Action& a) { return a.kind == ActionKind::param_gather; };
    const std::vector<Action> before = actions_where(overlapped, gather),
                              after = actions_where(p, gather);
    REQUIRE(before.size() > 1);
    REQUIRE(after.size() == before.size());
    const auto first_compute = std::find_if(p.actions.begin(), p.actions.end(), [](const Action& a) {
      return a.kind == ActionKind::compute;
    });
    for (size_t i = 0; i < after.size(); ++i) {
      CHECK(before[i].stream == Stream::zero_comm);
      CHECK(after[i].stream == Stream::compute);
      CHECK(after[i].bytes == before[i].bytes);
    }
    CHECK(count_in(p.actions.begin(), first_compute, gather) == static_cast<int>(after.size()));
  }
}

TEST_CASE("gradient buckets close at Megatron-LM's size, in backward order", "[schedule]") {
  // Llama 3 8B layers hold 218M parameters, more than max(40M, 10⁶·dp): one bucket per unit,
  // each reduced right after that unit's backward.
  const Model m = load_model("llama3-8b");
  Layout l = layout(8, 1, 1, 1);
  CHECK(grad_bucket_params(Training{}, l) == 40'000'000);
  CHECK(grad_bucket_params(Training{}, layout(64, 1, 1, 1)) == 64'000'000);
  const Program p = build_program(m, test::training(8, 4096), l, 0);
  std::vector<int> closing_layers;
  for (size_t i = 0; i < p.actions.size(); ++i) {
    const Action& a = p.actions[i];
    if (a.kind != ActionKind::grad_reduce || a.group != Group::dp) continue;
    closing_layers.push_back(a.layer_begin);
    REQUIRE(a.deps_count == 1);
    const Action& producer = p.actions[p.deps_of(a)[0]];
    CHECK(producer.kind == ActionKind::compute);
    CHECK(producer.pass == Pass::backward);
    CHECK(producer.layer_begin == a.layer_begin);
  }
  CHECK(closing_layers.size() == size_t(m.num_layers + 2));
  CHECK(std::is_sorted(closing_layers.rbegin(), closing_layers.rend()));
}

TEST_CASE("a framework's bucket size, and ZeRO-1 reduced whole after the backward", "[schedule]") {
  const Model m = load_model("llama3-8b");
  Training ddp = test::training(8, 4096);
  ddp.grad_bucket_elements = 500'000'000;  // DeepSpeed's: two layers and more to a bucket
  Layout l = layout(8, 1, 1, 1);
  CHECK(grad_bucket_params(ddp, l) == 500'000'000);
  const auto reductions = [](const Program& p) {
    return actions_where(p, [](const Action& a) {
      return a.kind == ActionKind::grad_reduce && a.group == Group::dp;
    });
  };
  const std::vector<Action> big = reductions(build_program(m, ddp, l, 0));
  CHECK(big.size() < size_t(m.num_layers / 2));
  // nanotron's ZeRO-1: one all-reduce of every gradient, after the last backward, on the compute
  // stream, where Megatron-LM's reduce-scatters its buckets during the backward.
  l.zero = 1;
  Training whole = test::training(8, 4096);
  whole.grad_dtype = Dtype::fp32;  // accumulate_grad_in_fp32
  whole.zero1_whole_all_reduce = true;
  const Program p = build_program(m, whole, l, 0);
  const std::vector<Action> one = reductions(p);
  REQUIRE(one.size() == 1);
  CHECK(one[0].op == Collective::all_reduce);
  CHECK(one[0].stream == Stream::compute);
  CHECK(one[0].params == count_parameters(m).total());  // tp = pp = 1: all of them
  CHECK(one[0].bytes == one[0].params * dtype_bytes(whole.grad_dtype));
  for (const Action& a : reductions(build_program(m, test::training(8, 4096), l, 0))) {
    CHECK(a.op == Collective::reduce_scatter);
    CHECK(a.stream == Stream::dp_comm);
  }
  // Only with fp32 gradients: nanotron keeps DDP's buckets otherwise.
  whole.grad_dtype = Dtype::bf16;
  CHECK(reductions(build_program(m, whole, l, 0)).size() > 1);
  // A tied word embedding's pieces need no sum over dp before the pair's: every rank holds it.
  const Model tied = small_gpt();
  Layout z = layout(2, 1, 2, 4);
  z.zero = 1;
  Training t = small_training();
  t.grad_dtype = Dtype::fp32;
  const auto pieces_sums = [&](const Training& tr) {
    return count(build_program(tied, tr, z, 0), [](const Action& a) {
      return a.kind == ActionKind::grad_reduce && a.group != Group::pp && a.parts == 0;
    });
  };
  CHECK(pieces_sums(t) == 1);
  t.zero1_whole_all_reduce = true;
  CHECK(pieces_sums(t) == 0);
}

TEST_CASE("tied embeddings: first and last stage all-reduce the word-embedding gradient",
          "[schedule]") {
  const Model m = small_gpt();
  const Layout l = layout(1, 2, 4, 4);
  for (int64_t rank = 0; rank < l.world(); ++rank) {
    const Program p = build_program(m, small_training(), l, rank);
    const int n = count(p, [](const Action& a) {
      return a.kind == ActionKind::grad_reduce && a.group == Group::pp;
    });
    const bool end_stage = p.coord.pp == 0 || p.coord.pp == 3;
    CHECK(n == (end_stage ? 1 : 0));
    if (end_stage) {
      CHECK(p.embedding_group == std::vector<int64_t>{p.coord.tp, p.coord.tp + 3 * 2});
    }
  }
  // Under ZeRO the ends own different pieces of it: each sums its pieces over dp into the whole
  // tensor first, the step's only all-reduce over dp, on the pair's stream just before its sum.
  Layout z = layout(2, 1, 2, 4);
  z.zero = 1;
  const Program p = build_program(m, small_training(), z, 0);
  const auto pair = std::find_if(p.actions.begin(), p.actions.end(), [](const Action& a) {
    return a.kind == ActionKind::grad_reduce && a.group == Group::pp;
  });
  REQUIRE(pair != p.actions.end());
  const Action& assembly = *(pair - 1);
  CHECK(assembly.kind == ActionKind::grad_reduce);
  CHECK(assembly.group == Group::dp);
  CHECK(assembly.op == Collective::all_reduce);
  CHECK(assembly.stream == Stream::pp_comm);
  CHECK(assembly.bytes == pair->bytes);
  CHECK(count(p, [](const Action& a) {
          return a.group == Group::dp && a.op == Collective::all_reduce;
        }) == 1);
  z.zero = 0;
  CHECK(count(build_program(m, small_training(), z, 0), [](const Action& a) {
          return a.kind == ActionKind::grad_reduce && a.group == Group::dp &&
                 a.stream == Stream::pp_comm;
        }) == 0);
}

}  // namespace shardplan
