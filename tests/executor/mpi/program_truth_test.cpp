// The program is the only truth for communication: a layer collective the program does not have,
// or of other bytes than its action's, stops the step with an error naming the action and both
// byte counts (executor/program_calls.h) instead of being timed as nothing. The recording runtime
// drops or halves one of the layers' calls on every rank alike, so that no rank waits on another;
// and the step of an untouched run, every layout the interpreter tests train aside, runs through.
// Gradient reductions and ZeRO gathers are held to their actions' bytes the same way.
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "executor/interpreter.h"
#include "tests/executor/mpi/interpreter_fixtures.h"
#include "tests/executor/mpi/recording_runtime.h"

namespace shardplan {
namespace {

using Catch::Matchers::Contains;

// One step of `l` whose groups' calls (all_reduce, all_gather, reduce_scatter) go through `edit`.
void run_edited_step(const Layout& l, test::LayersCallEdit edit) {
  InterpreterSettings settings;
  settings.wrap_runtime = [&](std::unique_ptr<RankRuntime> rt) {
    auto r = std::make_unique<test::RecordingRuntime>(std::move(rt));
    r->edit_layers_call = edit;
    return std::unique_ptr<RankRuntime>(std::move(r));
  };
  RankInterpreter run(test::tiny_model(), test::fp32_training(), l, test::text(), settings);
  run.run_step(0);
}

// One step of tp2 (with sequence parallelism when `sp`) whose layers' calls go through `edit`.
void run_edited_step(bool sp, test::LayersCallEdit edit) {
  Layout l = test::layout(1, 2, 1);
  l.sequence_parallel = sp;
  run_edited_step(l, std::move(edit));
}

// Edits the first call on `group` of kind `op` and `count` elements (any: -1) with `how`.
test::LayersCallEdit first_call(Collective op, int64_t count,
                                std::function<std::optional<int64_t>(int64_t)> how,
                                Group group = Group::tp) {
  auto done = std::make_shared<bool>(false);
  return [=](Group g, Collective c, int64_t n) -> std::optional<int64_t> {
    if (g != group || c != op || (count >= 0 && n != count) || *done) return n;
    *done = true;
    return how(n);
  };
}

TEST_CASE("program truth: a dropped layer collective is an error naming its action",
          "[interpreter]") {
  if (test::world_size() != 2) return;
  // The embedding's forward all-reduce, the program's first collective: 16 tokens × 64 fp32.
  const auto drop =
      first_call(Collective::all_reduce, 16 * 64, [](int64_t) { return std::nullopt; });
  CHECK_THROWS_WITH(run_edited_step(false, drop),
                    Contains("(tp all_reduce mb0 c0) moves 4096 bytes, the layers moved 0"));
}

TEST_CASE("program truth: a resized layer collective is an error with both byte counts",
          "[interpreter]") {
  if (test::world_size() != 2) return;
  // Under SP a layer's backward all-gather carries its output gradient and its saved input, 8
  // tokens × 64 each per rank; halved, it carries what the program said before it counted the
  // input.
  const auto halve =
      first_call(Collective::all_gather, 2 * 8 * 64, [](int64_t n) { return n / 2; });
  CHECK_THROWS_WITH(run_edited_step(true, halve),
                    Contains("(tp all_gather mb0 c0) moves 8192 bytes, the layers' tp all_gather "
                             "moved 4096"));
}

TEST_CASE("program truth: a resized data-parallel reduction is an error with both byte counts",
          "[interpreter]") {
  if (test::world_size() != 2) return;
  // dp=2 without ZeRO: the step's first gradient bucket all-reduced over dp, its first call halved
  // on both ranks alike.
  const auto halve =
      first_call(Collective::all_reduce, -1, [](int64_t n) { return n / 2; }, Group::dp);
  CHECK_THROWS_WITH(run_edited_step(test::layout(2, 1, 1), halve),
                    Contains("(grad_reduce") && Contains(" bytes, the executor's ") &&
                        Contains(" moved "));
}

TEST_CASE("program truth: an untouched step's calls are its program's", "[interpreter]") {
  if (test::world_size() != 2) return;
  for (bool sp : {false, true}) CHECK_NOTHROW(run_edited_step(sp, {}));
  // Data parallelism's reductions and gathers, ZeRO's padded pieces included.
  for (int zero : {0, 1, 2, 3}) {
    Layout l = test::layout(2, 1, 1);
    l.zero = zero;
    CHECK_NOTHROW(run_edited_step(l, {}));
  }
}

}  // namespace
}  // namespace shardplan
