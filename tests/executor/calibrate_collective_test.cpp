// The collective driver's columns (size, count, algbw, busbw) and size sweep, computed by hand for
// fake timings; no MPI call is made.
#include <vector>

#include <catch2/catch.hpp>

#include "executor/calibrate_collective.h"

namespace shardplan {
namespace {

TEST_CASE("collective driver: algbw and busbw columns for a fake timing", "[calibrate]") {
  // all_reduce, 4 ranks, 262144 floats = 1 MiB in 1 ms: algbw 1.048576 GB/s, busbw × 2·3/4.
  BenchRow r = bench_row(kAllReduceBench, 4, 262144, 1e-3);
  CHECK(r.size_bytes == 1048576);
  CHECK(r.count == 262144);
  CHECK(r.algbw_GBps == Approx(1.048576).epsilon(1e-12));
  CHECK(r.busbw_GBps == Approx(1.572864).epsilon(1e-12));
  // reduce_scatter, 4 ranks, 65536 floats out each: size is the 1 MiB input; 0.5 ms; busbw × 3/4.
  r = bench_row(kReduceScatterBench, 4, 65536, 0.5e-3);
  CHECK(r.size_bytes == 1048576);
  CHECK(r.algbw_GBps == Approx(2.097152).epsilon(1e-12));
  CHECK(r.busbw_GBps == Approx(1.572864).epsilon(1e-12));
  // all_gather, 2 ranks, 1024 floats in each: size is the 8192 B output; 4 us; busbw × 1/2.
  r = bench_row(kAllGatherBench, 2, 1024, 4e-6);
  CHECK(r.size_bytes == 8192);
  CHECK(r.algbw_GBps == Approx(2.048).epsilon(1e-12));
  CHECK(r.busbw_GBps == Approx(1.024).epsilon(1e-12));
  // all_to_all, 8 ranks, 16 floats per peer: 512 B; 1 us; busbw × 7/8.
  r = bench_row(kAllToAllBench, 8, 16, 1e-6);
  CHECK(r.size_bytes == 512);
  CHECK(r.busbw_GBps == Approx(0.448).epsilon(1e-12));
  // broadcast and send_recv: busbw = algbw.
  for (const CollectiveBench* b : {&kBroadcastBench, &kSendRecvBench}) {
    r = bench_row(*b, 8, 1000, 2e-6);
    CHECK(r.size_bytes == 4000);
    CHECK(r.algbw_GBps == Approx(2.0).epsilon(1e-12));
    CHECK(r.busbw_GBps == r.algbw_GBps);
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
}

TEST_CASE("collective driver: send pattern", "[calibrate]") {
  CHECK(send_value(0, 0) == 1000);
  CHECK(send_value(1, 7) == 2007);
  CHECK(send_value(2, 1003) == 3003);
}

}  // namespace
}  // namespace shardplan
