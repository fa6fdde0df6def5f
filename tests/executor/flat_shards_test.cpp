// ZeRO's shards of a flat buffer (executor/group_comm.h's FlatShards), whose per-member counts
// decide how a range is reduce-scattered and gathered: one equal-part collective, or (uneven)
// one call per member (MPI's v-collectives, NCCL's grouped reduces and broadcasts).
#include <catch2/catch.hpp>

#include "executor/group_comm.h"

namespace shardplan {
namespace {

TEST_CASE("flat shards: ranges split by member, the last shard short", "[executor]") {
  const FlatShards s{10, 4, 1};  // split_range: 3, 3, 2, 2 elements; stored padded to 3
  CHECK(s.padded() == 3);
  CHECK(s.mine().begin == 3);
  CHECK(s.mine().end == 6);
  CHECK(s.counts_in({0, 10}) == std::vector<int64_t>{3, 3, 2, 2});
  CHECK(s.counts_in({2, 7}) == std::vector<int64_t>{1, 3, 1, 0});  // a bucket's edges
  CHECK(s.counts_in({6, 6}) == std::vector<int64_t>{0, 0, 0, 0});
  const FlatShards even{12, 4, 0};
  CHECK(even.counts_in({0, 12}) == std::vector<int64_t>{3, 3, 3, 3});  // one collective
}

}  // namespace
}  // namespace shardplan
