// What every layer call needs besides its weights: the shape of the micro-batch and of this rank's
// share of a layer, and where memory, tensor-parallel collectives and GEMM counts go.
#pragma once

#include <cstdint>

#include "core/model.h"
#include "executor/matmul.h"
#include "executor/param_layout.h"
#include "executor/tensor_allocator.h"
#include "executor/tp_comm.h"

namespace shardplan {

struct LayerDims {
  int64_t batch = 1;  // sequences in the micro-batch
  int64_t seq = 1;    // tokens per sequence
  int64_t hidden = 0;
  int64_t heads = 0;     // this rank's query heads (num_heads / tp)
  int64_t kv_heads = 0;  // this rank's key/value heads
  int64_t head_dim = 0;
  int64_t ffn = 0;  // this rank's MLP columns
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  int tp = 1;
  bool sequence_parallel = false;  // the residual stream split over the tp ranks by tokens

  int64_t tokens() const { return batch * seq; }
  // Rows of the residual stream this rank holds: all tokens, or its 1/tp under sequence
  // parallelism.
  int64_t local_tokens() const { return sequence_parallel ? tokens() / tp : tokens(); }
  int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }
  int64_t fc1_width() const { return activation == Activation::swiglu ? 2 * ffn : ffn; }
};

// The dims of rank `shard` on a micro-batch of batch × seq tokens. Throws InputError when sequence
// parallelism cannot split the micro-batch's tokens evenly.
LayerDims layer_dims(const Model& m, const RankShard& shard, int64_t batch, int64_t seq,
                     bool sequence_parallel);

template <class T>
struct LayerContext {
  TensorAllocator& alloc;
  TpComm<T>& tp;
  MatmulStats* matmul_stats = nullptr;

  Buffer<T> allocate(MemoryCategory c, int64_t count, const char* what) {
    return alloc.template allocate<T>(c, count, what);
  }
};

}  // namespace shardplan
