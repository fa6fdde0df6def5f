// A model chunk — the consecutive layers a pipeline stage runs for one micro-batch (one virtual
// stage under the interleaved schedule), with the embedding before them on the first stage and the
// head after them on the last — forward and backward, as a pipeline interpreter calls it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "executor/layers/block.h"
#include "executor/layers/layer_context.h"
#include "executor/layers/lm_head.h"

namespace shardplan {

struct ModelChunk {
  std::vector<int> layers;  // in execution order
  bool embedding = false;   // starts from the tokens
  bool head = false;        // ends in the loss
};

// Every layer with embedding and head: the whole model as one chunk (pp = 1).
ModelChunk whole_model_chunk(const Model& m);

struct MicroBatchTokens {
  const int32_t* inputs = nullptr;   // batch · seq token ids, every token of the micro-batch
  const int32_t* targets = nullptr;  // the next token of each; read by the head only
};

template <class T>
struct ChunkSaved {
  std::vector<BlockSaved<T>> layers;
  HeadSaved<T> head;
};

template <class T>
struct ChunkOutput {
  Buffer<T>
      activations;  // the last layer's output for the next stage; empty when the chunk has the head
  double loss_sum = 0;  // the micro-batch's summed token losses when it has the head
};

// `x` is the previous stage's output (ignored when the chunk has the embedding). `params` is the
// rank's flat buffer laid out by `layout`, which must hold the chunk's tensors.
template <class T>
ChunkOutput<T> chunk_forward(const ModelChunk& chunk, const ParamLayout& layout, const T* params,
                             const LayerDims& d, MicroBatchTokens tokens, Buffer<T> x,
                             Recompute mode, ChunkSaved<T>& saved, LayerContext<T>& c);

// Accumulates gradients into `grads` (same layout). dy is the next stage's input gradient, or
// ignored when the chunk has the head, which starts from loss_scale·(sum of token losses). Returns
// the gradient of the chunk's input for the previous stage (empty when it has the embedding).
template <class T>
Buffer<T> chunk_backward(const ModelChunk& chunk, const ParamLayout& layout, const T* params,
                         T* grads, const LayerDims& d, MicroBatchTokens tokens,
                         ChunkSaved<T>&& saved, const T* dy, compute_t<T> loss_scale,
                         LayerContext<T>& c);

// Under sequence parallelism each tp rank's gradients of the replicated tensors (norms, the
// row-parallel biases, the position embedding) cover its own tokens: all-reduce them over tp once
// the step's micro-batches are done (Korthikanti et al. 2022, §4.2.2; Megatron-LM's
// allreduce_layernorm_grads). Without it they are already equal on every tp rank.
template <class T>
void all_reduce_sequence_parallel_grads(const ParamLayout& layout, T* grads, TpComm<T>& tp);

}  // namespace shardplan
