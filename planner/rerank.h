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
  int64_t actions = 0;     // in its simulation (one program per pipeline stage)
  bool simulated = true;   // false: above kMaxRerankActions, its estimate's figures stand
  double step_time_s = 0;  // simulated
  double objective = 0;    // the objective on the simulated step, lower is better
  int64_t peak_bytes = 0;  // worst rank, with the simulated activation peak
  bool fits = true;        // by the simulated peak
};

// The most actions the re-rank simulates for one layout. The simulator holds about 200 bytes and
// takes about 0.5 us per action (measured 2026-11-26: llama3-405b, pp=64, 8,192 micro-batches,
// 10.4 M actions in 6.0 s and 2.0 GB), so plan's re-rank of five layouts stays within seconds and
// half a gigabyte each; `simulate` takes a layout alone up to kMaxSimulatedActions.
inline constexpr int64_t kMaxRerankActions = 2'000'000;

// Simulates each of `top` (one program per pipeline stage) and orders them by the objective on the
// simulated step; layouts whose simulated peak does not fit go last, ties keep the search's order.
// A layout of more than kMaxRerankActions keeps its estimate, marked not simulated.
std::vector<Resimulated> rerank_by_simulation(const Model& m, const Cluster& c, const Training& t,
                                              const std::vector<Ranked>& top, Objective o);

// The re-ranked layouts beside their estimates, and which one the simulation puts first.
// Wrapped to fit kTableColumns as format_top is; `wide`: the layout first, on one line.
std::string format_rerank(const std::vector<Resimulated>& r, bool wide = false);

}  // namespace shardplan
