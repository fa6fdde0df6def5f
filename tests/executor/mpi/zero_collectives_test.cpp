// Every ZeRO reduce-scatter and all-gather of a step has equal counts on every member of the zero
// group, each one unit's piece, ceil(n / members) elements (FSDP's and Megatron-LM's balanced
// shards: executor/state/zero_shards.h) — where one shard of the whole flat buffer gave a layer's
// reduce-scatter counts like [n, 0]. A recording runtime (recording_runtime.h) logs the calls of
// one step and of a full-state gather; the members' logs are compared.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "executor/interpreter.h"
#include "executor/state/param_layout.h"
#include "executor/state/zero_shards.h"
#include "tests/executor/mpi/interpreter_fixtures.h"
#include "tests/executor/mpi/recording_runtime.h"
#include "tests/core/odd_model.h"

namespace shardplan {
namespace {

// Every rank's log, flattened to (group, op, count) triples, on every rank.
std::vector<std::vector<int64_t>> all_logs(const std::vector<test::BlocksCall>& log) {
  std::vector<int64_t> mine;
  for (const test::BlocksCall& c : log)
    mine.insert(mine.end(), {static_cast<int64_t>(c.group), static_cast<int64_t>(c.op), c.count});
  const int world = test::world_size();
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<size_t>(world)), displs(static_cast<size_t>(world));
  MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < world; ++r) displs[static_cast<size_t>(r)] = total, total += sizes[r];
  std::vector<int64_t> flat(static_cast<size_t>(total));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, flat.data(), sizes.data(), displs.data(), MPI_INT64_T,
                 MPI_COMM_WORLD);
  std::vector<std::vector<int64_t>> out;
  for (int r = 0; r < world; ++r)
    out.emplace_back(flat.begin() + displs[r], flat.begin() + displs[r] + sizes[r]);
  return out;
}

void check_equal_counts(Layout l, const Model& m) {
  INFO(m.name << " " << to_string(l));
  test::RecordingRuntime* recorder = nullptr;
  InterpreterSettings settings;
  settings.wrap_runtime = [&](std::unique_ptr<RankRuntime> rt) {
    auto r = std::make_unique<test::RecordingRuntime>(std::move(rt));
    recorder = r.get();
    return std::unique_ptr<RankRuntime>(std::move(r));
  };
  RankInterpreter run(m, test::fp32_training(), l, test::text(), settings);
  run.run_step(0);
  run.gather_full_state();
  const Program& p = run.program();
  const Group zero_group = dense_dp_group(l);
  const ZeroShards shards =
      zero_shards(p, param_layout(m, rank_shard(m, l, p.coord)), zero_group,
                  group_size(l, zero_group), rank_in_group(l, p.rank, zero_group));
  REQUIRE(!recorder->log.empty());
  for (const test::BlocksCall& c : recorder->log) {
    CHECK(c.group == zero_group);
    bool a_piece = false;  // ceil(n / members) of one of the rank's units
    for (size_t u = 0; u < shards.units.size(); ++u) a_piece |= c.count == shards.piece(u);
    CHECK(a_piece);
  }
  const std::vector<std::vector<int64_t>> logs = all_logs(recorder->log);
  for (const int64_t member : p.groups[static_cast<size_t>(zero_group)]) {
    INFO("rank " << p.rank << " against its zero group's rank " << member);
    CHECK(logs[static_cast<size_t>(member)] == logs[static_cast<size_t>(p.rank)]);
  }
}

TEST_CASE("ZeRO collectives: equal counts on every member (dp2, cp2)", "[interpreter]") {
  if (test::world_size() != 2) return;
  for (int zero = 1; zero <= 3; ++zero) {
    INFO("zero " << zero);
    Layout l = test::layout(2, 1, 1);
    l.zero = zero;
    check_equal_counts(l, test::tiny_model());
    check_equal_counts(l, test::odd_model());
    Layout cp = test::layout(1, 1, 1, 2);
    cp.zero = zero;
    check_equal_counts(cp, test::tiny_model());
  }
}

TEST_CASE("ZeRO collectives: equal counts on every member (dp2·pp2, dp2·tp2)", "[world4]") {
  if (test::world_size() != 4) return;
  Layout dp_pp = test::layout(2, 1, 2);
  dp_pp.zero = 3;
  dp_pp.schedule = Schedule::interleaved;
  dp_pp.vpp = 2;
  check_equal_counts(dp_pp, test::tiny_model());
  Layout dp_tp = test::layout(2, 2, 1);
  dp_tp.sequence_parallel = true;
  dp_tp.zero = 2;
  check_equal_counts(dp_tp, test::tiny_model());
}

}  // namespace
}  // namespace shardplan
