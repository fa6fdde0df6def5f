// The CUDA backend's pipeline links (executor/runtime/pipeline_channels.h), planned on the host:
// one peer per direction and pass, and on every link the sender's messages in the order the
// receiver receives them (NCCL matches in order; MPI matched by tag), for every schedule, pp, vpp
// and dp the executor runs.
#include "executor/runtime/pipeline_channels.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "core/presets.h"

namespace shardplan {
namespace {

TEST_CASE("pipeline channels: one peer each, messages in the receiver's order", "[executor]") {
  const Model m = load_model("gpt-tiny");  // 4 layers: pp=2 with vpp=2, pp=4
  const Training t{.global_batch = 8, .seq_len = 16};
  struct Case {
    int pp, vpp, dp, microbatches;
    Schedule schedule;
  };
  for (const Case c :
       {Case{2, 1, 1, 4, Schedule::one_f_one_b}, Case{2, 1, 1, 4, Schedule::gpipe},
        Case{4, 1, 1, 8, Schedule::one_f_one_b}, Case{2, 1, 2, 4, Schedule::one_f_one_b},
        Case{2, 2, 1, 4, Schedule::interleaved}, Case{2, 2, 1, 8, Schedule::interleaved},
        Case{4, 1, 1, 2, Schedule::one_f_one_b}}) {
    const Layout l{.dp = c.dp,
                   .pp = c.pp,
                   .num_microbatches = c.microbatches,
                   .vpp = c.vpp,
                   .schedule = c.schedule};
    INFO(to_string(l));
    std::vector<Program> programs;
    for (int64_t r = 0; r < l.world(); ++r) programs.push_back(build_program(m, t, l, r));
    for (const Program& p : programs) {
      const std::vector<PipelineChannel> channels = pipeline_channels(p);
      // Both directions of both passes, but the first and last stage of a plain pipeline have
      // no neighbour on one side.
      const bool middle = p.coord.pp > 0 && p.coord.pp < c.pp - 1;
      CHECK(channels.size() == (c.pp == 1 ? 0u : c.vpp > 1 || middle ? 4u : 2u));
      for (const PipelineChannel& ch : channels) {
        if (ch.direction != Direction::send) continue;
        const Program& peer = programs[static_cast<size_t>(ch.peer)];
        const PipelineChannel back{Direction::recv, ch.pass, p.rank};
        const std::vector<PipelineChannel> peer_channels = pipeline_channels(peer);
        INFO("rank " << p.rank << " to " << ch.peer);
        CHECK(std::find(peer_channels.begin(), peer_channels.end(), back) != peer_channels.end());
        CHECK(channel_tags(p, ch) == channel_tags(peer, back));
        CHECK(!channel_tags(p, ch).empty());
      }
    }
  }
}

}  // namespace
}  // namespace shardplan
