#include "executor/embedding.h"

#include <algorithm>

#include "executor/tp_collectives.h"

namespace shardplan {

namespace {
// The first residual-stream row this rank holds: its share of the tokens under sequence
// parallelism.
int64_t first_local_token(const LayerDims& d, int tp_rank) {
  return d.sequence_parallel ? tp_rank * d.local_tokens() : 0;
}
}  // namespace

template <class T>
Buffer<T> embedding_forward(const LayerDims& d, const int32_t* tokens, const T* wte_local,
                            ElementRange vocab, const T* wpe, LayerContext<T>& c) {
  const int64_t H = d.hidden;
  Buffer<T> partial =
      c.allocate(MemoryCategory::buffers, d.tokens() * H, "token embedding partial sums");
  for (int64_t t = 0; t < d.tokens(); ++t)
    if (tokens[t] >= vocab.begin && tokens[t] < vocab.end)
      std::copy_n(wte_local + (tokens[t] - vocab.begin) * H, H, partial.data() + t * H);
  Buffer<T> out = c.allocate(MemoryCategory::activations, d.local_tokens() * H, "embedding output");
  reduce_partial_sums(d, c, partial, out.data());
  const int64_t first = first_local_token(d, c.tp.rank());
  for (int64_t r = 0; r < d.local_tokens(); ++r) {
    const T* pos = wpe + d.position((first + r) % d.seq) * H;
    for (int64_t i = 0; i < H; ++i) out[r * H + i] += pos[i];
  }
  return out;
}

template <class T>
void embedding_backward(const LayerDims& d, const int32_t* tokens, const T* dout,
                        ElementRange vocab, T* dwte_local, T* dwpe, LayerContext<T>& c) {
  const int64_t H = d.hidden;
  const int64_t first = first_local_token(d, c.tp.rank());
  for (int64_t r = 0; r < d.local_tokens(); ++r) {
    T* pos = dwpe + d.position((first + r) % d.seq) * H;
    for (int64_t i = 0; i < H; ++i) pos[i] += dout[r * H + i];
  }
  Buffer<T> gathered;
  const T* dfull = gather_tokens(d, c, dout, gathered);
  for (int64_t t = 0; t < d.tokens(); ++t) {
    if (tokens[t] < vocab.begin || tokens[t] >= vocab.end) continue;
    T* row = dwte_local + (tokens[t] - vocab.begin) * H;
    for (int64_t i = 0; i < H; ++i) row[i] += dfull[t * H + i];
  }
}

#define SHARDPLAN_INSTANTIATE(T)                                                                \
  template Buffer<T> embedding_forward<T>(const LayerDims&, const int32_t*, const T*,           \
                                          ElementRange, const T*, LayerContext<T>&);            \
  template void embedding_backward<T>(const LayerDims&, const int32_t*, const T*, ElementRange, \
                                      T*, T*, LayerContext<T>&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
