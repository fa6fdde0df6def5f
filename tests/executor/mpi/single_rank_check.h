// A layout's run of the interpreter against the fp32 single-rank run of the same steps: every
// step's loss and the final parameters (gathered into the whole model's flat layout) within the
// tolerances of the run's precision, and each rank's parameter, gradient and optimizer bytes at its
// peak equal to the cost model's (simulator/memory_model.h), to the byte.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "core/param_shard.h"
#include "executor/interpreter.h"
#include "simulator/memory_model.h"
#include "tests/executor/mpi/interpreter_fixtures.h"
#include "tests/executor/single_rank_training.h"

namespace shardplan::test {

inline void check_against_single_rank(Layout l, const Training& t, const Tolerances& tolerance,
                                      const Model& m = tiny_model()) {
  REQUIRE(l.world() == world_size());
  l.num_microbatches = static_cast<int>(kGlobalBatch / (l.micro_batch * l.dp));
  InterpreterSettings settings;
  settings.poison_for_overwrite = true;  // a layer reading an output before writing it shows
  const TrainingRun reference = train_single_rank(
      m, text(), kSteps, l.micro_batch, static_cast<int>(kGlobalBatch / l.micro_batch), kSeq,
      Recompute::none, settings.adam, settings.seed);

  INFO(to_string(l) << " in " << enum_name(t.dtype, kDtypeNames));
  RankInterpreter run(m, t, l, text(), settings);
  for (int step = 0; step < kSteps; ++step) {
    const double loss = run.run_step(step).loss, want = reference.losses[static_cast<size_t>(step)];
    INFO("step " << step << ": loss " << loss << ", single rank fp32 " << want);
    CHECK(std::abs(loss - want) / std::max(std::abs(want), 1e-30) < tolerance.loss);
  }
  const std::vector<float> params = run.gather_full_parameters();
  if (run.program().rank == 0) {
    REQUIRE(params.size() == reference.final_params.size());
    // Relative to the whole model's norm (relative_norm_error): the key bias's gradient is
    // exactly 0 — softmax ignores a shift of a query's scores — and float rounding gives it noise.
    const double error = relative_norm_error(params, reference.final_params);
    INFO("parameter error " << error);
    CHECK(error < tolerance.params);
    if (tolerance.min_params > 0) CHECK(error > tolerance.min_params);
  }
  const ModelStateBytes predicted =
      stage_model_state_bytes(m, t, l, stage_layers(m, l, run.program().coord.pp));
  const MemoryBytes& measured = run.allocator().at_peak();
  CHECK(measured[MemoryCategory::parameters] == predicted.parameters);
  CHECK(measured[MemoryCategory::gradients] == predicted.gradients);
  CHECK(measured[MemoryCategory::optimizer] == predicted.optimizer());
}

}  // namespace shardplan::test
