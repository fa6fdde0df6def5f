// A single-rank training loop for the tests and the benchmark: the whole model as one chunk, the
// step's micro-batches accumulated into one gradient, then Adam. Losses are per-token means.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "executor/data.h"
#include "executor/state/adam.h"
#include "executor/state/param_init.h"
#include "tests/executor/chunk.h"

namespace shardplan::test {

struct TrainingRun {
  std::vector<double> losses;   // per step
  MatmulStats matmul;           // every GEMM of every step
  double step_cpu_seconds = 0;  // the steps' CPU time, initialisation left out
  MemoryBytes at_peak;          // the allocator's categories at its peak
  int64_t peak_bytes = 0;
  std::vector<float> final_params;  // after the last step, in the whole model's flat layout
};

inline TrainingRun train_single_rank(const Model& m, const TextTokens& text, int steps,
                                     int micro_batch, int num_microbatches, int64_t seq,
                                     Recompute mode, const AdamConfig& adam, uint64_t seed) {
  TensorAllocator alloc("rank 0");
  alloc.set_poison_for_overwrite(true);  // a layer reading an output before writing it shows
  SingleRankTpComm<float> tp;
  TrainingRun run;
  run.matmul.cpu_time = true;
  LayerContext<float> c{alloc, tp, &run.matmul};
  const RankShard shard = whole_model(m);
  const ParamLayout layout = param_layout(m, shard);
  const ModelChunk chunk = whole_model_chunk(m);
  const LayerDims d = layer_dims(m, shard, micro_batch, seq, false);
  Buffer<float> params =
      alloc.allocate<float>(MemoryCategory::parameters, layout.total, "parameters");
  Buffer<float> grads = alloc.allocate<float>(MemoryCategory::gradients, layout.total, "gradients");
  init_parameters(m, layout, seed, params.span());
  AdamState state = adam_state(alloc, layout.total, /*master_weights=*/false);
  Buffer<int32_t> inputs =
      alloc.allocate<int32_t>(MemoryCategory::buffers, d.tokens(), "input tokens");
  Buffer<int32_t> targets =
      alloc.allocate<int32_t>(MemoryCategory::buffers, d.tokens(), "target tokens");
  const auto step_tokens = static_cast<float>(d.tokens() * num_microbatches);
  const double cpu_start = thread_cpu_seconds();
  for (int step = 0; step < steps; ++step) {
    std::fill(grads.data(), grads.data() + grads.size(), 0.0f);
    double loss_sum = 0;
    for (int mb = 0; mb < num_microbatches; ++mb) {
      sample_micro_batch(text, seed, step, first_sequence(0, mb, micro_batch, num_microbatches),
                         micro_batch, seq, inputs.span(), targets.span());
      const MicroBatchTokens tokens{inputs.data(), targets.data()};
      ChunkSaved<float> saved;
      loss_sum +=
          chunk_forward(chunk, layout, params.data(), d, tokens, {}, mode, saved, c).loss_sum;
      chunk_backward<float>(chunk, layout, params.data(), grads.data(), d, tokens, std::move(saved),
                            nullptr, 1.0f / step_tokens, c);
    }
    adam_step(c.dev(), adam, state, params.span(), grads.span());
    run.losses.push_back(loss_sum / step_tokens);
  }
  run.step_cpu_seconds = thread_cpu_seconds() - cpu_start;
  run.at_peak = alloc.at_peak();
  run.peak_bytes = alloc.peak_bytes();
  run.final_params.assign(params.data(), params.data() + params.size());
  return run;
}

}  // namespace shardplan::test
