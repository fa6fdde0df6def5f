// The event simulation of a step of one of tests/core/schedule_fixtures.h's models under a layout
// and a pricer, with small_training's batch and sequence.
#pragma once

#include "simulator/event_simulator.h"
#include "tests/core/schedule_fixtures.h"

namespace shardplan::test {

inline SimResult simulate_small(const Model& m, const Layout& l, const ActionPricer& pricer,
                                bool symmetric = true) {
  return simulate(build_step(m, small_training(), l, symmetric), pricer);
}

}  // namespace shardplan::test
