// The two places where a tensor-parallel layer meets the residual stream (Shoeybi et al. 2019,
// Fig. 3's f and g; Korthikanti et al. 2022, §4.2.2's all-gather and reduce-scatter under sequence
// parallelism): gathering the stream's tokens before a column-parallel layer and reducing a
// row-parallel layer's partial sums back into it.
#pragma once

#include <span>

#include "executor/layers/layer_context.h"

namespace shardplan {

// The full [tokens, hidden] input of a column-parallel layer: under sequence parallelism the ranks'
// local rows all-gathered into `scratch`; otherwise `local` itself, which already holds every
// token.
template <class T>
const T* gather_tokens(const LayerDims& d, LayerContext<T>& c, const T* local, Buffer<T>& scratch) {
  if (!d.sequence_parallel) return local;
  const int64_t n = d.local_tokens() * d.hidden;
  scratch = c.allocate_for_overwrite(MemoryCategory::buffers, d.tokens() * d.hidden,
                                     "sequence-parallel all-gather");
  c.tp.all_gather(std::span<const T>(local, static_cast<size_t>(n)), scratch.span());
  return scratch.data();
}

// Two [local_tokens, hidden] tensors for every token, as the backward pass of a layer needs its
// output gradient and its saved (norm-output) input: under sequence parallelism one all-gather of
// both, packed side by side, unpacked into first_buffer and second_buffer (the data volume of
// Megatron-LM's two all-gathers, in one collective); otherwise the local tensors themselves.
template <class T>
struct GatheredPair {
  Buffer<T> first_buffer, second_buffer;
  const T* first = nullptr;
  const T* second = nullptr;
};

template <class T>
GatheredPair<T> gather_token_pair(const LayerDims& d, LayerContext<T>& c, const T* a, const T* b) {
  GatheredPair<T> g;
  g.first = a;
  g.second = b;
  if (!d.sequence_parallel) return g;
  const int64_t n = d.local_tokens() * d.hidden;
  Buffer<T> packed = c.allocate_for_overwrite(MemoryCategory::buffers, 2 * n,
                                              "sequence-parallel all-gather input");
  Kernels<T>& dev = c.dev();
  dev.copy(packed.data(), a, n);
  dev.copy(packed.data() + n, b, n);
  Buffer<T> gathered = c.allocate_for_overwrite(MemoryCategory::buffers, d.tp * 2 * n,
                                                "sequence-parallel all-gather");
  c.tp.all_gather(packed.span(), gathered.span());
  g.first_buffer =
      c.allocate_for_overwrite(MemoryCategory::buffers, d.tokens() * d.hidden, "gathered gradient");
  g.second_buffer =
      c.allocate_for_overwrite(MemoryCategory::buffers, d.tokens() * d.hidden, "gathered input");
  // Rank r's part of gathered is [first | second], n each: one strided copy per tensor.
  const T* parts = gathered.data();
  dev.copy(matrix(g.first_buffer.data(), d.tp, n), matrix(parts, d.tp, n, 2 * n));
  dev.copy(matrix(g.second_buffer.data(), d.tp, n), matrix(parts + n, d.tp, n, 2 * n));
  g.first = g.first_buffer.data();
  g.second = g.second_buffer.data();
  return g;
}

// Where a row-parallel layer writes its partial sums of `out` [local_tokens, hidden]: `out` itself
// when tp = 1, the sum having that one term; otherwise `partial`, allocated here [tokens, hidden]
// (zeroed where the layer writes only some rows) for reduce_partial_sums.
template <class T>
T* partial_sums(const LayerDims& d, LayerContext<T>& c, T* out, Buffer<T>& partial,
                const char* what, bool zeroed = false) {
  if (d.tp == 1) return out;
  const int64_t n = d.tokens() * d.hidden;
  partial = zeroed ? c.allocate(MemoryCategory::buffers, n, what)
                   : c.allocate_for_overwrite(MemoryCategory::buffers, n, what);
  return partial.data();
}

// A row-parallel layer's partial sums [tokens, hidden] (partial_sums) → this rank's rows of their
// sum in `out` [local_tokens, hidden]: all-reduce, or reduce-scatter under sequence parallelism;
// nothing when tp = 1. `partial` may be overwritten.
template <class T>
void reduce_partial_sums(const LayerDims& d, LayerContext<T>& c, Buffer<T>& partial, T* out) {
  if (d.tp == 1) return;
  const auto n = static_cast<size_t>(d.local_tokens() * d.hidden);
  if (d.sequence_parallel) {
    c.tp.reduce_scatter(partial.span(), std::span<T>(out, n));
    return;
  }
  c.tp.all_reduce(partial.span(), ReduceOp::sum);
  c.dev().copy(out, partial.data(), static_cast<int64_t>(n));
}

}  // namespace shardplan
