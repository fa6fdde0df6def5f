// What every layer call needs besides its weights: the shape of the micro-batch and of this rank's
// share of a layer, and where memory, tensor- and context-parallel collectives and GEMM counts go.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/model.h"
#include "executor/cpu_kernels.h"
#include "executor/layers/linear.h"
#include "executor/layers/matmul.h"
#include "executor/layers/tp_comm.h"
#include "executor/state/param_layout.h"
#include "executor/state/tensor_allocator.h"
#include "executor/token_positions.h"

namespace shardplan {

struct LayerDims {
  int64_t batch = 1;  // sequences in the micro-batch
  int64_t seq = 1;    // tokens per sequence on this rank: seq_len / cp
  int64_t hidden = 0;
  int64_t heads = 0;     // this rank's query heads (num_heads / tp)
  int64_t kv_heads = 0;  // this rank's key/value heads
  int64_t head_dim = 0;
  int64_t ffn = 0;  // this rank's MLP columns
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  int tp = 1;
  bool sequence_parallel = false;  // the residual stream split over the tp ranks by tokens
  int cp = 1;                      // context-parallel ranks each sequence is split over
  int cp_rank = 0;

  int64_t tokens() const { return batch * seq; }
  // Key positions each query meets: the whole sequence (all-gathered under cp).
  int64_t kv_seq() const { return seq * cp; }
  // Position in the whole sequence of this rank's `i`-th token of a sequence (token_positions.h).
  int64_t position(int64_t i) const { return positions().of(i); }
  // The same for cp rank `rank`'s i-th token.
  int64_t position_on(int rank, int64_t i) const { return TokenPositions{seq, cp, rank}.of(i); }
  // This rank's positions as a value (token_positions.h), for the kernels.
  TokenPositions positions() const { return {seq, cp, cp_rank}; }
  // Rows of the residual stream this rank holds: all tokens, or its 1/tp under sequence
  // parallelism.
  int64_t local_tokens() const { return sequence_parallel ? tokens() / tp : tokens(); }
  int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }
  int64_t fc1_width() const { return activation == Activation::swiglu ? 2 * ffn : ffn; }
};

// The dims of rank `shard` on a micro-batch of batch sequences of seq_len tokens, each split over
// `cp` context-parallel ranks of which this is `cp_rank`. Throws InputError when 2·cp does not
// divide seq_len or sequence parallelism cannot split the rank's tokens evenly.
LayerDims layer_dims(const Model& m, const RankShard& shard, int64_t batch, int64_t seq_len,
                     bool sequence_parallel, int cp = 1, int cp_rank = 0);

template <class T>
struct LayerContext {
  TensorAllocator& alloc;
  TpComm<T>& tp;
  MatmulStats* matmul_stats = nullptr;
  // The context-parallel group (the same collectives as tp's; LayerDims::cp > 1 needs it): the
  // all-gather of K, V and the reduce-scatter of dK, dV in attention (context_parallel.h).
  TpComm<T>* cp = nullptr;
  // Where the layers' GEMMs and kernels run (kernels.h): the CPU unless the interpreter runs the
  // rank on another device, whose memory `alloc` then hands out.
  Kernels<T>* kernels = &cpu_kernels<T>();
  // The tp group's collectives on compute_t<T> values (the cross-entropy's row maxima and sums,
  // fp32 under bf16); not needed where T is its own compute type, as `tp` serves.
  TpComm<compute_t<T>>* tp_compute = nullptr;
  // Under a split backward, where a layer's backward (B) leaves its weight gradients for W.
  DeferredWeightGrads<T>* weight_grads = nullptr;

  Kernels<T>& dev() { return *kernels; }
  TpComm<compute_t<T>>& compute_tp() {
    if constexpr (std::is_same_v<T, compute_t<T>>)
      return tp;
    else
      return (assert(tp_compute != nullptr && "a bf16 context names its fp32 collectives"),
              *tp_compute);
  }
  Buffer<T> allocate(MemoryCategory c, int64_t count, const char* what) {
    return alloc.template allocate<T>(c, count, what);
  }
  // For a tensor written in full before it is read (TensorAllocator::allocate_for_overwrite).
  Buffer<T> allocate_for_overwrite(MemoryCategory c, int64_t count, const char* what) {
    return alloc.template allocate_for_overwrite<T>(c, count, what);
  }
};

}  // namespace shardplan
