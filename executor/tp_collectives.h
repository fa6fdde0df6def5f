// The two places where a tensor-parallel layer meets the residual stream (Shoeybi et al. 2019,
// Fig. 3's f and g; Korthikanti et al. 2022, §4.2.2's all-gather and reduce-scatter under sequence
// parallelism): gathering the stream's tokens before a column-parallel layer and reducing a
// row-parallel layer's partial sums back into it.
#pragma once

#include <algorithm>
#include <span>

#include "executor/layer_context.h"

namespace shardplan {

// The full [tokens, hidden] input of a column-parallel layer: under sequence parallelism the ranks'
// local rows all-gathered into `scratch`; otherwise `local` itself, which already holds every
// token.
template <class T>
const T* gather_tokens(const LayerDims& d, LayerContext<T>& c, const T* local, Buffer<T>& scratch) {
  if (!d.sequence_parallel) return local;
  const int64_t n = d.local_tokens() * d.hidden;
  scratch =
      c.allocate(MemoryCategory::buffers, d.tokens() * d.hidden, "sequence-parallel all-gather");
  c.tp.all_gather(std::span<const T>(local, static_cast<size_t>(n)), scratch.span());
  return scratch.data();
}

// A row-parallel layer's partial sums [tokens, hidden] → this rank's rows of their sum in `out`
// [local_tokens, hidden]: all-reduce, or reduce-scatter under sequence parallelism. `partial` may
// be overwritten.
template <class T>
void reduce_partial_sums(const LayerDims& d, LayerContext<T>& c, Buffer<T>& partial, T* out) {
  const auto n = static_cast<size_t>(d.local_tokens() * d.hidden);
  if (d.sequence_parallel) {
    c.tp.reduce_scatter(partial.span(), std::span<T>(out, n));
    return;
  }
  c.tp.all_reduce(partial.span(), ReduceOp::sum);
  std::copy(partial.data(), partial.data() + n, out);
}

}  // namespace shardplan
