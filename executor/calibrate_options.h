// What `shardplan calibrate` measures, whatever the backend: the models, tp shares, micro-batches
// and sequence length whose layer shapes the GEMMs (and the CPU's kernels) are timed on, and the
// collectives' sweep; checked before anything starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "executor/calibrate_collective.h"
#include "executor/calibrate_gemm.h"
#include "executor/calibrate_timing.h"
#include "executor/layer_context.h"

namespace shardplan {

struct CalibrateOptions {
  std::vector<Model> models;                 // GEMM shapes from their layers
  std::vector<int> tp = {1, 2};              // tensor-parallel shares of those layers
  std::vector<int64_t> micro_batches = {1};  // sequences per micro-batch
  int64_t seq = 0;              // tokens per sequence; 0: each model's max_position_embeddings
  int64_t stream_elements = 0;  // 0: stream_elements()
  TimingOptions timing;         // GEMM and STREAM timing
  SweepOptions sweep;           // collective sizes and timing
};

// Throws InputError naming --tp when a tp does not divide a model's heads, and --max-bytes when a
// collective's sweep on some group of `world` ranks would have fewer than two sizes to fit.
void validate_calibrate_options(const CalibrateOptions& o, int world);

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

// The distinct GEMM calls of those shares' layers and heads.
std::vector<GemmCall> model_gemm_calls(const std::vector<LayerShare>& shares);

}  // namespace shardplan
