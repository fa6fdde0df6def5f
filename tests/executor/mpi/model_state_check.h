// Each rank's parameter, gradient and optimizer bytes at its peak against the cost model's
// (simulator/memory_model.h) for the interpreter's layout and precision: equal to the byte.
#pragma once

#include <catch2/catch.hpp>

#include "core/param_shard.h"
#include "executor/interpreter.h"
#include "simulator/memory_model.h"

namespace shardplan::test {

inline void check_model_state_bytes(const Model& m, const Training& t, const Layout& l,
                                    const RankInterpreter& run) {
  const ModelStateBytes predicted =
      stage_model_state_bytes(m, t, l, stage_layers(m, l, run.program().coord.pp));
  const MemoryBytes& measured = run.allocator().at_peak();
  CHECK(measured[MemoryCategory::parameters] == predicted.parameters);
  CHECK(measured[MemoryCategory::gradients] == predicted.gradients);
  CHECK(measured[MemoryCategory::optimizer] == predicted.optimizer());
}

}  // namespace shardplan::test
