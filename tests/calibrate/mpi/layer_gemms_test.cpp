// Calibration's GEMM list is the interpreter's: the GEMMs a real step makes (a tp=2 rank of
// gpt-tiny, its micro-batches through every layer and the head) are, call for call and site for
// site, record_layer_gemms' layer times the layers plus its head, times the micro-batches.
#include "calibrate/layer_gemms.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "executor/cpu_kernels.h"
#include "executor/interpreter.h"
#include "executor/layers/lm_head.h"
#include "tests/executor/mpi/interpreter_fixtures.h"

namespace shardplan {
namespace {

// Calls in one order, whatever order they were made in: by shape and operands, then by site.
std::vector<GemmCall> sorted(std::vector<GemmCall> calls) {
  std::sort(calls.begin(), calls.end(), [](const GemmCall& a, const GemmCall& b) {
    if (a != b) return a < b;
    return a.what < b.what;
  });
  return calls;
}

TEST_CASE("calibration's GEMMs are those a step of the interpreter makes", "[calibrate]") {
  if (test::world_size() != 2) return;
  const Model m = test::tiny_model();
  const Layout l = test::layout(1, 2, 1);
  std::vector<GemmCall> made;
  InterpreterSettings settings;
  settings.record_gemms = &made;
  RankInterpreter run(m, test::fp32_training(), l, test::text(), settings);
  run.run_step(0);

  const RankShard shard = rank_shard(m, l, run.program().coord);
  const LayerDims d = layer_dims(m, shard, l.micro_batch, test::kSeq, false);
  const LayerGemms recorded = record_layer_gemms(d, head_vocab(param_layout(m, shard)).count(),
                                                 heads_per_call_of(cpu_kernels<float>()));
  std::vector<GemmCall> expected;
  for (int mb = 0; mb < l.num_microbatches; ++mb) {
    for (int layer = 0; layer < m.num_layers; ++layer)
      expected.insert(expected.end(), recorded.layer.begin(), recorded.layer.end());
    expected.insert(expected.end(), recorded.head.begin(), recorded.head.end());
  }
  // qkv, proj, fc1, fc2 and the head: 3 GEMMs each; attention 6 a head of a sequence.
  CHECK(recorded.layer.size() == static_cast<size_t>(4 * 3 + 6 * d.batch * d.heads));
  CHECK(recorded.head.size() == 3);
  const std::vector<GemmCall> a = sorted(made), b = sorted(expected);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("call " << i << ": the step's " << a[i].what << ", calibration's " << b[i].what);
    CHECK(a[i] == b[i]);
    CHECK(a[i].what == b[i].what);
  }
}

}  // namespace
}  // namespace shardplan
