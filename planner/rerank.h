// The search's best layouts re-ranked by the step simulator. The closed form prices every
// candidate in microseconds; the event simulation, which times the overlap, stalls and bubbles the
// closed form approximates, orders the few best ("compile, then run", as Calculon does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/model.h"
#include "core/training.h"
#include "planner/search.h"

namespace shardplan {

struct Resimulated {
  Ranked ranked;           // as the search ranked it
  int search_rank = 0;     // its place in the search's order, from 1
  double step_time_s = 0;  // simulated
  double objective = 0;    // the objective on the simulated step, lower is better
  int64_t peak_bytes = 0;  // worst rank, with the simulated activation peak
  bool fits = true;        // by the simulated peak
};

// Simulates each of `top` (one program per pipeline stage) and orders them by the objective on the
// simulated step; layouts whose simulated peak does not fit go last, ties keep the search's order.
std::vector<Resimulated> rerank_by_simulation(const Model& m, const Cluster& c, const Training& t,
                                              const std::vector<Ranked>& top, Objective o);

// The re-ranked layouts beside their estimates, and which one the simulation puts first.
std::string format_rerank(const std::vector<Resimulated>& r);

}  // namespace shardplan
