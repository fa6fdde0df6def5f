#include "simulator/allocator_replay.h"

#include <catch2/catch.hpp>

#include "simulator/estimate.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

struct Replayed {
  RankMemory memory;
  AllocatorPeaks peaks;
};

Replayed replay(const Layout& l, int stage, const ExecutionOptions& x, int64_t seq = 4096) {
  const Model m = test::preset_model("llama3-8b");
  Training t = test::training(64, seq);
  t.dtype = Dtype::bf16;
  t.master_weights = true;
  const Cluster c = test::preset_cluster("dgx-h100", 1);
  const StageLayers s = stage_layers(m, l, stage);
  const RankMemory r = rank_memory(m, t, l, s, c.device, x);
  return {r, replay_allocations(m, t, l, s, r, x)};
}

}  // namespace

TEST_CASE("the replay holds the memory model's peak, and reserves more than it holds",
          "[memory][allocator]") {
  for (const int pp : {1, 2}) {
    const Layout l = test::layout(8, 64, 1, pp, 1, 1);
    for (int stage = 0; stage < pp; ++stage) {
      const auto [r, peaks] = replay(l, stage, {});
      INFO("pp " << pp << ", stage " << stage);
      CHECK(peaks.reserved >= peaks.allocated);
      // Its peak is the model's items at once, plus a moment's transients (a layer's output
      // before the residual, the MLP's input gradients) and the blocks' rounding: within 5 %.
      CHECK(peaks.allocated >= r.peak_bytes());
      CHECK(static_cast<double>(peaks.allocated) <= 1.05 * static_cast<double>(r.peak_bytes()));
    }
  }
}

TEST_CASE(
    "the zero-bubble schedules' replay reaches their peak: ZB-H2's 2pp − 1 micro-batches, ZB-V's "
    "2pp chunks",
    "[memory][allocator]") {
  // Replaying fewer micro-batches than the warm-up holds would price the cache on a step that
  // never reaches the schedule's peak.
  for (const Schedule s : {Schedule::zb_h1, Schedule::zb_h2, Schedule::zb_v}) {
    Layout l = test::layout(8, 16, 1, 4, 1, 1);  // dp 2, m 8: more than ZB-H2's 7 in flight
    l.schedule = s;
    l.vpp = v_placement(s) ? 2 : 1;
    for (int stage = 0; stage < l.pp; ++stage) {
      const auto [r, peaks] = replay(l, stage, {});
      INFO(enum_name(s, kScheduleNames) << " stage " << stage);
      CHECK(peaks.allocated >= r.peak_bytes());
      CHECK(static_cast<double>(peaks.allocated) <= 1.05 * static_cast<double>(r.peak_bytes()));
    }
  }
}

TEST_CASE("a loss larger than any block the layers freed grows the reserve",
          "[memory][allocator]") {
  // pp = 2: the last stage runs its loss over 128k-entry logits (0.5 GiB blocks per micro-batch
  // of 1×4096 tokens in fp32) after its layers' activations; the first stage never does.
  const Layout l = test::layout(8, 64, 1, 2, 1, 1);
  const auto [last, last_peaks] = replay(l, 1, {});
  const auto [first, first_peaks] = replay(l, 0, {});
  CHECK(last_peaks.reserved - last_peaks.allocated > first_peaks.reserved - first_peaks.allocated);
}

TEST_CASE("expandable segments hold the same tensors in a reserve of about their own size",
          "[memory][allocator]") {
  // The last stage's loss blocks, larger than any the layers freed, grow the default reserve; an
  // expandable range only maps the pages the live bytes reach (20 MiB for the large pool, 2 MiB
  // for the small one, at most one of each left unused at the end).
  const Layout l = test::layout(8, 64, 1, 2, 1, 1);
  ExecutionOptions expandable;
  expandable.expandable_segments = true;
  const auto [r, classic] = replay(l, 1, {});
  const auto [same, grown] = replay(l, 1, expandable);
  // The same tensors; only the default allocator's unsplit rests (up to 1 MiB a large block)
  // count as allocated beyond them.
  CHECK(grown.allocated <= classic.allocated);
  CHECK(static_cast<double>(grown.allocated) > 0.999 * static_cast<double>(classic.allocated));
  CHECK(grown.reserved < classic.reserved);
  CHECK(grown.reserved - grown.allocated < classic.reserved - classic.allocated);
}

TEST_CASE("the estimate adds the allocator's cache only where PyTorch's allocator holds tensors",
          "[memory][allocator]") {
  const Model m = test::preset_model("llama3-8b");
  const Cluster c = test::preset_cluster("dgx-h100", 1);
  const Training t = test::training(64, 4096);
  const Layout l = test::layout(8, 64, 1, 1, 1, 1);
  const Estimate pytorch = estimate(m, c, t, l, ExecutionOptions{});
  CHECK(pytorch.memory().allocator_cache_bytes > 0);
  CHECK(pytorch.memory().reserved_bytes() ==
        pytorch.memory().peak_bytes() + pytorch.memory().allocator_cache_bytes);
  const Estimate own = estimate(m, c, t, l, cpu_executor_options());
  CHECK(own.memory().allocator_cache_bytes == 0);
}

TEST_CASE("an optimizer step that copies the gradients to fp32 reserves its copies",
          "[memory][allocator]") {
  // DeepSpeed's ZeRO-2 step over 8 ranks: a flat bf16 copy of the rank's eighth of the gradients
  // and its fp32 cast, 6 bytes a partition element, beside the partition's gradients and the
  // moments made at start-up; the short sequences' activations freed no block that large.
  const Layout l = test::layout(8, 64, 1, 1, 1, 2);
  const auto [plain, plain_peaks] = replay(l, 0, {}, 256);
  const auto [copied, copied_peaks] = replay(l, 0, {.step_grad_copy = true}, 256);
  const int64_t copies = 6 * (plain.state.master_weights / 4);
  REQUIRE(copied.step_grad_copy_bytes > 0);
  const int64_t grown = copied_peaks.reserved - plain_peaks.reserved;
  CHECK(grown >= copies);
  // At most the moments, made before the activations, no longer reuse what those freed.
  CHECK(grown <= copies + plain.state.optimizer_moments);
  // The replay holds the memory model's peak, the copies included, within a moment's transients.
  CHECK(copied_peaks.allocated >= copied.peak_bytes());
  CHECK(static_cast<double>(copied_peaks.allocated) <=
        1.05 * static_cast<double>(copied.peak_bytes()));
}

TEST_CASE("DeepSpeed's ZeRO-1 step frees autograd's gradients into blocks the next backward reuses",
          "[memory][allocator]") {
  // Over 8 ranks the copies (6 bytes an element of an eighth) are smaller than the gradients the
  // step frees first, so the tensors' peak does not grow; the next step makes its gradients again
  // in the blocks they left, so the reserve grows by less than they hold.
  const Layout l = test::layout(8, 64, 1, 1, 1, 1);
  const auto [plain, plain_peaks] = replay(l, 0, {}, 256);
  const auto [copied, copied_peaks] = replay(l, 0, {.step_grad_copy = true}, 256);
  CHECK(copied.step_grad_copy_bytes == 0);
  const int64_t copies = 6 * (plain.state.master_weights / 4);
  CHECK(copied_peaks.reserved - plain_peaks.reserved <= copies + plain.state.optimizer_moments);
  CHECK(copied_peaks.reserved - plain_peaks.reserved < plain.state.gradients);
  CHECK(copied_peaks.allocated >= copied.peak_bytes());
  CHECK(static_cast<double>(copied_peaks.allocated) <=
        1.05 * static_cast<double>(copied.peak_bytes()));
}
