// The cost model's operations behind a program's compute actions: every GEMM and memory-bound
// kernel it prices for each part and pass (simulator/parts_compute.h's PricedOp), looked up per
// action. What `calibrate --from` rescales by measured time and what `compare` sets beside the
// GEMM time a run measured.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "core/plan.h"
#include "core/schedule.h"
#include "simulator/compute_model.h"
#include "simulator/execution_options.h"
#include "simulator/parts_compute.h"

namespace shardplan {

// The cost model's operations for one plan, by part and pass.
using OpTable = std::map<std::pair<Part, Pass>, std::vector<PricedOp>>;
OpTable op_table(const Plan& p, const DeviceRates& rates, const ExecutionOptions& x);

// The operations a compute action runs: its parts' in its pass, and in a backward the re-forward
// of selective recomputation, which has no action of its own (CostModelPricer's rule).
std::vector<const PricedOp*> action_ops(const OpTable& table, const Action& a, Recompute r);

// 2·m·n·k FLOPs of each of a GEMM operation's `count` products.
double gemm_flops(const PricedOp& op);

// The GEMMs of a program's compute actions over one step: FLOPs and the cost model's time.
struct ProgramGemms {
  double flops = 0;
  double time_s = 0;
};
ProgramGemms program_gemms(const OpTable& table, const Program& p, Recompute r);

}  // namespace shardplan
