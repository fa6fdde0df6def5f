#include "executor/layers/embedding.h"

#include "executor/layers/tp_collectives.h"

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
  Buffer<T> out = c.allocate_for_overwrite(MemoryCategory::activations, d.local_tokens() * H,
                                           "embedding output");
  // Zeroed under tp: the rows of tokens outside this rank's vocabulary rows stay 0.
  Buffer<T> partial;
  c.dev().embedding_rows(
      tokens, d.tokens(), wte_local, vocab, H,
      partial_sums(d, c, out.data(), partial, "token embedding partial sums", /*zeroed=*/true));
  reduce_partial_sums(d, c, partial, out.data());
  c.dev().position_embedding_add(out.data(), d.local_tokens(), H, wpe, d.positions(),
                                 first_local_token(d, c.tp.rank()));
  return out;
}

template <class T>
void embedding_backward(const LayerDims& d, const int32_t* tokens, const T* dout,
                        ElementRange vocab, T* dwte_local, T* dwpe, LayerContext<T>& c) {
  const int64_t H = d.hidden;
  c.dev().position_embedding_backward(dout, d.local_tokens(), H, dwpe, d.positions(),
                                      first_local_token(d, c.tp.rank()));
  Buffer<T> gathered;
  const T* dfull = gather_tokens(d, c, dout, gathered);
  c.dev().embedding_rows_backward(tokens, d.tokens(), dfull, vocab, H, dwte_local);
}

#define SHARDPLAN_INSTANTIATE(T)                                                                \
  template Buffer<T> embedding_forward<T>(const LayerDims&, const int32_t*, const T*,           \
                                          ElementRange, const T*, LayerContext<T>&);            \
  template void embedding_backward<T>(const LayerDims&, const int32_t*, const T*, ElementRange, \
                                      T*, T*, LayerContext<T>&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
