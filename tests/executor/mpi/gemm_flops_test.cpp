// The GEMMs a rank runs in a step against the cost model's GEMMs of the same program
// (simulator/priced_ops.h): the executor times its GEMMs apart from the rest of the actions
// (core/measurement.h's MeasuredGemms), and `compare` sets the two side by side, which means
// little unless they are the same GEMMs. Same FLOPs on every rank, to rounding, for layouts that
// split the GEMMs differently: tp (column and row parallel), sp, pp (stages, interleaved chunks),
// cp (load-balanced attention blocks), and recomputation (re-forwards inside the backward).
#include <catch2/catch.hpp>

#include "core/presets.h"
#include "executor/interpreter.h"
#include "simulator/device_efficiency.h"
#include "simulator/execution_options.h"
#include "simulator/priced_ops.h"
#include "tests/executor/mpi/interpreter_fixtures.h"

namespace shardplan {
namespace {

void check_gemm_flops(const Layout& l) {
  Plan p;
  p.model = test::tiny_model();
  p.cluster = load_cluster("local-cpu");
  p.training = test::fp32_training();
  p.layout = l;
  RankInterpreter run(p.model, p.training, p.layout, test::text(), InterpreterSettings{});
  const StepMeasurement step = run.run_step(0);
  const ExecutionOptions x = cpu_executor_options();
  const OpTable ops = op_table(p, device_rates(p.cluster.device, p.training.dtype), x);
  const ProgramGemms priced = program_gemms(ops, run.program(), l.recompute);
  INFO(to_string(l) << ", rank " << run.program().rank << ": executor " << step.gemms.flops
                    << " FLOPs, cost model " << priced.flops);
  CHECK(step.gemms.flops > 0);
  CHECK(step.gemms.flops == Approx(priced.flops).epsilon(1e-12));
  CHECK(step.gemms.seconds > 0);
}

}  // namespace

TEST_CASE("interpreter: a step's GEMM FLOPs are the cost model's, rank by rank", "[interpreter]") {
  if (test::world_size() != 2) return;
  Layout sp = test::layout(1, 2, 1);
  sp.sequence_parallel = true;
  Layout interleaved = test::layout(1, 1, 2);
  interleaved.schedule = Schedule::interleaved;
  interleaved.vpp = 2;
  Layout full = test::layout(2, 1, 1);
  full.recompute = Recompute::full;
  Layout selective = test::layout(1, 2, 1);
  selective.recompute = Recompute::selective;
  for (const Layout& l : {test::layout(2, 1, 1), test::layout(1, 2, 1), sp, test::layout(1, 1, 2),
                          interleaved, test::layout(1, 1, 1, 2), full, selective})
    check_gemm_flops(l);
}

}  // namespace shardplan
