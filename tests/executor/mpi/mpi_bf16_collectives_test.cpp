// The CPU backend's collectives in bf16 (mpi_comm.h): MPI has no bfloat16, so its elements travel
// as a pair of bytes and its sum and max are user operations. On 2 ranks every element of a sum is
// one addition: the result must be bf16(float(a) + float(b)) bit for bit, the rounding NCCL's
// ncclBfloat16 sum makes; gathers and scatters move the bits unchanged, in place too.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "executor/bf16.h"
#include "executor/runtime/mpi_comm.h"
#include "tests/executor/mpi/interpreter_fixtures.h"

namespace shardplan {
namespace {

// Rank r's n values: seeded by r, spread over several binades so that sums round.
std::vector<bf16> rank_values(int rank, size_t n) {
  std::mt19937 gen(static_cast<uint32_t>(17 + rank));
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<bf16> v;
  for (size_t i = 0; i < n; ++i) v.emplace_back(dist(gen));
  return v;
}

bool same_bits(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].bits != b[i].bits) return false;
  return true;
}

}  // namespace

TEST_CASE("mpi collectives: bf16 sums and maxima in fp32, rounded once", "[interpreter]") {
  if (test::world_size() != 2) return;
  HostStreams streams;
  MpiGroupComm mpi(MPI_COMM_WORLD, Group::dp, "dp", streams);
  GroupComm& comm = mpi;  // the typed calls are the interface's
  const int rank = comm.rank();
  const size_t n = 1000;
  const std::vector<bf16> mine = rank_values(rank, n), other = rank_values(1 - rank, n);
  std::vector<bf16> sum_want(n), max_want(n);
  for (size_t i = 0; i < n; ++i) {
    sum_want[i] = bf16(float(mine[i]) + float(other[i]));
    max_want[i] = bf16(std::max(float(mine[i]), float(other[i])));
  }
  // Some of the sums round: the test can tell a rounded sum from a truncated one.
  size_t rounded = 0;
  for (size_t i = 0; i < n; ++i)
    if (float(sum_want[i]) != float(mine[i]) + float(other[i])) ++rounded;
  CHECK(rounded > n / 4);

  std::vector<bf16> x = mine;
  comm.all_reduce(std::span<bf16>(x), ReduceOp::sum);
  CHECK(same_bits(x, sum_want));
  x = mine;
  comm.layers<bf16>().all_reduce(std::span<bf16>(x), ReduceOp::max);
  CHECK(same_bits(x, max_want));

  // reduce_scatter_blocks: this rank's half of the sum.
  const int64_t half = static_cast<int64_t>(n) / 2;
  std::vector<bf16> part(static_cast<size_t>(half));
  comm.reduce_scatter_blocks(mine.data(), part.data(), half);
  CHECK(same_bits(part, std::vector<bf16>(sum_want.begin() + rank * half,
                                          sum_want.begin() + (rank + 1) * half)));
}

TEST_CASE("mpi collectives: bf16 gathers move the bits, in place too", "[interpreter]") {
  if (test::world_size() != 2) return;
  HostStreams streams;
  MpiGroupComm mpi(MPI_COMM_WORLD, Group::tp, "tp", streams);
  GroupComm& comm = mpi;
  const int rank = comm.rank();
  const size_t n = 333;  // odd: no alignment to 4 bytes to lean on
  std::vector<bf16> want = rank_values(0, n);
  const std::vector<bf16> second = rank_values(1, n);
  want.insert(want.end(), second.begin(), second.end());
  const std::vector<bf16> mine = rank_values(rank, n);

  std::vector<bf16> out(2 * n);
  comm.all_gather_blocks(mine.data(), out.data(), static_cast<int64_t>(n));
  CHECK(same_bits(out, want));

  std::vector<bf16> in_place(2 * n);  // this rank's block already in place
  std::copy(mine.begin(), mine.end(), in_place.begin() + static_cast<int64_t>(rank * n));
  comm.all_gather_blocks(in_place.data() + rank * n, in_place.data(), static_cast<int64_t>(n));
  CHECK(same_bits(in_place, want));

  // The layers' view stamps its calls.
  std::vector<TimedCall> calls;
  comm.calls = &calls;
  std::vector<bf16> gathered(2 * n);
  comm.layers<bf16>().all_gather(mine, gathered);
  comm.calls = nullptr;
  CHECK(same_bits(gathered, want));
  REQUIRE(calls.size() == 1);
  CHECK(calls.front().op == Collective::all_gather);
  CHECK(calls.front().group == Group::tp);
}

}  // namespace shardplan
