// gpt-tiny trained on the shipped text on one rank: the loss must fall clearly (below 0.8× the
// first step's in 50 steps), and the recompute modes must train exactly alike.
#include "single_rank_training.h"

#include <catch2/catch.hpp>
#include <numeric>

#include "core/presets.h"

using namespace shardplan;

namespace {
TextTokens shipped_text() {
  return load_text_tokens(std::string(SHARDPLAN_SOURCE_DIR) + "/" + kDefaultTextFile, 65);
}
}  // namespace

TEST_CASE("training: gpt-tiny's loss falls on the shipped text", "[executor]") {
  const Model m = load_model("gpt-tiny");
  AdamConfig adam;
  adam.lr = 3e-3f;
  const test::TrainingRun run =
      test::train_single_rank(m, shipped_text(), 50, 4, 1, 64, Recompute::none, adam, 1234);
  const double first = run.losses.front();
  const double last5 = std::accumulate(run.losses.end() - 5, run.losses.end(), 0.0) / 5;
  INFO("first step " << first << ", mean of the last 5 " << last5 << ", " << run.step_cpu_seconds
                     << " s CPU");
  CHECK(std::abs(first - std::log(256.0)) <
        0.05);  // initial weights predict ~uniformly over the bytes
  CHECK(last5 < 0.8 * first);
}

TEST_CASE("training: recompute modes give the same losses, bit for bit", "[executor]") {
  const Model m = load_model("gpt-tiny");
  const TextTokens text = shipped_text();
  const auto losses = [&](Recompute mode) {
    return test::train_single_rank(m, text, 3, 2, 2, 32, mode, AdamConfig{}, 7).losses;
  };
  const std::vector<double> none = losses(Recompute::none);
  CHECK(losses(Recompute::selective) == none);
  CHECK(losses(Recompute::full) == none);
}
