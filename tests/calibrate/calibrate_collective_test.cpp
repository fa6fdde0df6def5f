// The collective driver's columns (size, count, algbw, busbw) and size sweep, computed by hand for
// fake timings; no MPI call is made.
#include "calibrate/calibrate_collective.h"

#include <catch2/catch.hpp>
#include <vector>

namespace shardplan {
namespace {

TEST_CASE("collective driver: algbw and busbw columns for a fake timing", "[calibrate]") {
  struct Case {
    const CollectiveBench* bench;
    int n;
    int64_t count;
    double time_s;
    int64_t size_bytes;  // by hand: the larger buffer of one rank
    double algbw_GBps;   // size / time
    double busbw_GBps;  // × 2(n−1)/n for all_reduce, (n−1)/n for the next three, 1 for the last two
  };
  const Case cases[] = {
      {&kAllReduceBench, 4, 262144, 1e-3, 1048576, 1.048576, 1.572864},  // 1 MiB in 1 ms
      {&kReduceScatterBench, 4, 65536, 0.5e-3, 1048576, 2.097152,
       1.572864},                                             // size: the 1 MiB input
      {&kAllGatherBench, 2, 1024, 4e-6, 8192, 2.048, 1.024},  // size: the 8 KiB output
      {&kAllToAllBench, 8, 16, 1e-6, 512, 0.512, 0.448},      // 16 floats per peer
      {&kBroadcastBench, 8, 1000, 2e-6, 4000, 2.0, 2.0},
      {&kSendRecvBench, 8, 1000, 2e-6, 4000, 2.0, 2.0},
  };
  for (const Case& c : cases) {
    INFO(enum_name(c.bench->collective, kCollectiveNames));
    const BenchRow r = bench_row(*c.bench, c.n, c.count, c.time_s);
    CHECK(r.size_bytes == c.size_bytes);
    CHECK(r.count == c.count);
    CHECK(r.time_s == c.time_s);
    CHECK(r.algbw_GBps == Approx(c.algbw_GBps).epsilon(1e-12));
    CHECK(r.busbw_GBps == Approx(c.busbw_GBps).epsilon(1e-12));
  }
}

TEST_CASE("collective driver: counts for a size and the sweep", "[calibrate]") {
  CHECK(count_for_bytes(kAllReduceBench, 4, 8) == 2);
  CHECK(count_for_bytes(kReduceScatterBench, 4, 100) == 6);  // 100 B / (4 ranks × 4 B)
  CHECK(count_for_bytes(kAllGatherBench, 4, 8) == 0);        // less than a float per rank
  CHECK(collective_benches().size() == 6);

  const SweepOptions o;  // 8 B to 4 MiB, doubling
  const std::vector<int64_t> all_reduce = sweep_counts(kAllReduceBench, o, 2);
  REQUIRE(all_reduce.size() == 20);  // 2^1 .. 2^20 floats
  CHECK(all_reduce.front() == 2);
  CHECK(all_reduce.back() == 1 << 20);
  const std::vector<int64_t> reduce_scatter = sweep_counts(kReduceScatterBench, o, 4);
  REQUIRE(reduce_scatter.size() == 19);  // 8 B is below a float per rank; 16 B .. 4 MiB
  CHECK(reduce_scatter.front() == 1);
  CHECK(reduce_scatter.back() == 1 << 18);
  // Sizes that round to the same count are timed once: 3 ranks, 8..64 B → 0, 1, 2, 5 floats each.
  const SweepOptions small{8, 64, 2, {}};
  CHECK(sweep_counts(kAllGatherBench, small, 3) == std::vector<int64_t>{1, 2, 5});
  // A largest size between two steps is timed too: 8 B .. 2 KiB doubling, then 3000 B.
  const SweepOptions uneven{8, 3000, 2, {}};
  const std::vector<int64_t> to_uneven = sweep_counts(kAllReduceBench, uneven, 2);
  REQUIRE(to_uneven.size() == 10);
  CHECK(to_uneven[8] == 512);
  CHECK(to_uneven.back() == 750);
}

TEST_CASE("collective driver: send pattern", "[calibrate]") {
  CHECK(send_value(0, 0) == 1000);
  CHECK(send_value(1, 7) == 2007);
  CHECK(send_value(2, 1003) == 3003);
}

}  // namespace
}  // namespace shardplan
