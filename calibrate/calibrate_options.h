// What `shardplan calibrate` measures, whatever the backend: the models, tp shares, micro-batches
// and sequence length whose layer shapes the GEMMs (and the CPU's kernels) are timed on, and the
// collectives' sweep; checked before anything starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/calibrate_collective.h"
#include "calibrate/calibrate_gemm.h"
#include "calibrate/calibrate_timing.h"
#include "core/model.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

struct CalibrateOptions {
  std::vector<Model> models;     // GEMM shapes from their layers
  std::vector<int> tp = {1, 2};  // tensor-parallel shares of those layers
  // Sequences per micro-batch: the sizes a plan of up to 8 sequences per micro-batch runs at (the
  // GEMM rates and kernel rates change with the shape as it leaves the caches).
  std::vector<int64_t> micro_batches = {1, 2, 4, 8};
  int64_t seq = 0;  // tokens per sequence; 0: each model's max_position_embeddings
  // The GEMMs' and kernels' storage type: fp32, or bf16 as mixed-precision training runs them
  // (fp32 accumulation, the loss and Adam in fp32). The profile prices plans of this dtype.
  Dtype dtype = Dtype::fp32;
  int64_t stream_elements = 0;  // 0: stream_elements()
  // GEMM, kernel and STREAM timing: samples of 10 ms at least, so that one sample of a
  // millisecond-long GEMM is not one call's luck on a shared machine (measured here: the same
  // GEMM varied 50-80 GFLOP/s between runs with 1 ms samples).
  TimingOptions timing{.warmup = 5, .samples = 3, .min_sample_s = 10e-3};
  // Passes over every GEMM and kernel (each pass timing all of them, `timing.samples` samples
  // each), the median over the passes kept: a slow spell of a shared machine then weighs on every
  // shape alike rather than on the shapes timed during it (seen here: a minute in which the tp=1
  // shapes ran at 45-53 GFLOP/s and the tp=2 shapes, timed later, at 100-107).
  int passes = 3;
  // One pass over the GEMMs and kernels, STREAM and the priced noise, no collectives: the compute
  // rates at one moment, as `demo` takes them between its rounds (merge_compute_passes,
  // core/profile.h).
  bool compute_only = false;
  SweepOptions sweep;  // collective sizes and timing

  // The passes over the GEMMs and kernels this calibration takes: one under compute_only.
  int compute_passes() const { return compute_only ? 1 : passes; }
  // What is timed in one pass only (STREAM, a GPU's GEMMs and copy): all the passes' samples.
  TimingOptions one_pass_timing() const {
    TimingOptions t = timing;
    t.samples *= compute_passes();
    return t;
  }
};

// The largest collective size to sweep for `models`: a whole model's fp32 gradients (the largest
// buffer a plan all-reduces, data parallelism without ZeRO or buckets), and 4 MiB (nccl-tests'
// figure at which bandwidth settles) at least.
int64_t sweep_max_bytes(const std::vector<Model>& models);

// Throws InputError naming --tp when a tp does not divide a model's heads, and --max-bytes when a
// collective's sweep on some group of `world` ranks would have fewer than two sizes to fit.
void validate_calibrate_options(const CalibrateOptions& o, int world);

// Rank 0's profile on every rank of `world`: rank 0 is in every first group of
// measure_collectives and alone saw every sweep. Collective.
Profile rank_zero_profile(const Profile& p, MPI_Comm world);

// One tp rank's share of a model's layer on one micro-batch size.
struct LayerShare {
  const Model& model;
  int tp = 1;
  LayerDims dims;
  int64_t vocab_rows = 0;  // of the LM head
  std::string label;
};

// Every (model, tp, micro-batch) of the options.
std::vector<LayerShare> layer_shares(const CalibrateOptions& o);

// The distinct GEMM calls of those shares' layers and heads, attention batched as the device to
// be timed batches it.
std::vector<GemmCall> model_gemm_calls(const std::vector<LayerShare>& shares,
                                       const HeadsPerCall& heads_per_call);

}  // namespace shardplan
