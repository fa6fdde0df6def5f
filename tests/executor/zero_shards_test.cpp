// ZeRO's shards per unit (executor/state/zero_shards.h): each unit split evenly over the members,
// padded, and the units the executor finds in a program's actions are the ones the cost model
// shards by (core/zero_units.h), so the shard sizes agree to the element.
#include "executor/state/zero_shards.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/placement.h"
#include "core/presets.h"
#include "core/zero_units.h"
#include "executor/state/param_layout.h"
#include "tests/core/odd_model.h"

namespace shardplan {
namespace {

TEST_CASE("zero shards: each unit split evenly over the members, the last pieces padded",
          "[executor]") {
  // Units [0, 3), [3, 10), [10, 14) over 4 members: pieces of 1, 2 and 1 elements.
  const ZeroShards s = zero_shards({10, 3, 3}, 14, 4, 1);
  REQUIRE(s.units.size() == 3);
  CHECK(s.piece(0) == 1);
  CHECK(s.piece(1) == 2);
  CHECK(s.piece(2) == 1);
  CHECK(s.offsets == std::vector<int64_t>{0, 1, 3, 4});
  CHECK(s.padded() == 4);
  CHECK(s.mine(1).begin == 5);
  CHECK(s.mine(1).end == 7);
  CHECK(s.piece_of(1, 3).count() == 1);  // 7 = 2 + 2 + 2 + 1: the last piece short by one
  CHECK(s.piece_of(0, 3).count() == 0);  // 3 elements over 4 members: the last holds none
  CHECK(s.units_in({3, 14}) == std::vector<size_t>{1, 2});
  const ZeroShards one = zero_shards({}, 14, 1, 0);  // one member: the whole buffer
  REQUIRE(one.units.size() == 1);
  CHECK(one.padded() == 14);
}

// Every rank's units as the executor finds them and as the cost model counts them.
void check_units_agree(const Model& m, Layout l, Training t = {}) {
  t.global_batch = 16;
  t.seq_len = 16;
  l.num_microbatches = static_cast<int>(t.global_batch / (l.micro_batch * l.dp));
  INFO(m.name << " " << to_string(l));
  const Group zero_group = dense_dp_group(l);
  const int members = group_size(l, zero_group);
  for (int64_t rank = 0; rank < l.world(); ++rank) {
    const Program p = build_program(m, t, l, rank);
    const ParamLayout layout = param_layout(m, rank_shard(m, l, p.coord));
    const ZeroShards s =
        zero_shards(p, layout, zero_group, members, rank_in_group(l, rank, zero_group));
    std::vector<int64_t> found;
    for (const ElementRange u : s.units) found.push_back(u.count());
    std::vector<int64_t> counted = zero_unit_params(m, t, l, p.coord.pp);
    std::sort(found.begin(), found.end());
    std::sort(counted.begin(), counted.end());
    INFO("rank " << rank);
    CHECK(found == counted);
    CHECK(s.padded() == zero_shard_params(counted, members));
  }
}

TEST_CASE("zero shards: the program's units are the cost model's", "[executor]") {
  const Model tiny = load_model(std::string(SHARDPLAN_SOURCE_DIR) + "/models/gpt-tiny.json");
  const Model odd = test::odd_model();
  for (int zero = 1; zero <= 3; ++zero)
    for (const Model* m : {&tiny, &odd}) {
      Layout l;
      l.dp = 2;
      l.zero = zero;
      check_units_agree(*m, l);  // ZeRO-3 with tied embeddings: the word embedding a unit
      l.dp = 4;
      check_units_agree(*m, l);
      l.dp = 2;
      l.cp = 2;
      check_units_agree(*m, l);
    }
  for (int zero = 1; zero <= 3; ++zero) {
    Layout l;
    l.dp = 2;
    l.pp = 2;
    l.zero = zero;
    check_units_agree(tiny, l);  // the head's lm_head copy on the last stage
    l.schedule = Schedule::interleaved;
    l.vpp = 2;
    check_units_agree(tiny, l);
    Layout tp;
    tp.dp = 2;
    tp.tp = 2;
    tp.zero = zero;
    check_units_agree(tiny, tp);
    // Buckets of a few thousand gradients (a DDP bucket cap), and ZeRO-1 reduced whole.
    Training ddp;
    ddp.grad_bucket_elements = 5'000;
    check_units_agree(tiny, l, ddp);
    ddp.zero1_whole_all_reduce = true;
    check_units_agree(tiny, l, ddp);
  }
}

TEST_CASE("zero shards: a unit that does not divide is padded, as the cost model pads it",
          "[executor]") {
  // odd_model's layers hold an odd number of parameters: ZeRO-3 over 2 ranks pads each by one
  // element, where one shard of the whole buffer would pad it once.
  const Model m = test::odd_model();
  const ParamLayout layout = param_layout(m, whole_model(m));
  Layout l;
  l.dp = 2;
  l.zero = 3;
  const std::vector<int64_t> units = zero_unit_params(m, Training{}, l, 0);
  CHECK(layout.layer_range(0).count() % 2 == 1);
  CHECK(zero_shard_params(units, 2) == (layout.total + m.num_layers) / 2);
}

}  // namespace
}  // namespace shardplan
