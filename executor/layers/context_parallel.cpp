#include "executor/layers/context_parallel.h"

#include <algorithm>
#include <cassert>

namespace shardplan {

namespace {

// Row of cp rank `rank`'s i-th token of sequence b among the whole sequences' rows.
int64_t whole_row(const LayerDims& d, int rank, int64_t b, int64_t i) {
  return b * d.kv_seq() + d.position_on(rank, i);
}

// Elements of one token's K and V: this rank's kv heads, both.
int64_t kv_width(const LayerDims& d) {
  return 2 * d.kv_heads * d.head_dim;
}

// The collectives' layout is rank-major (rank r's batch · seq rows, then r + 1's); the whole
// sequences' is sequence-major, by position. Copies every row from one to the other: rank r's
// rows of sequence b are two runs of seq/2 consecutive positions (its chunks r and 2·cp−1−r).
template <class T>
void reorder_rows(Kernels<T>& dev, const LayerDims& d, const T* from, T* to, bool to_whole) {
  const int64_t w = kv_width(d), half = d.seq / 2;
  for (int r = 0; r < d.cp; ++r)
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t i = 0; i < d.seq; i += half) {
        const int64_t ranked = (r * d.batch + b) * d.seq + i, whole = whole_row(d, r, b, i);
        const T* src = from + (to_whole ? ranked : whole) * w;
        dev.copy(to + (to_whole ? whole : ranked) * w, src, half * w);
      }
}

}  // namespace

void take_local_tokens(const LayerDims& d, const int32_t* whole, int32_t* local) {
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t i = 0; i < d.seq; ++i) local[b * d.seq + i] = whole[whole_row(d, d.cp_rank, b, i)];
}

template <class T>
KeyValues<const T*> gather_key_values(const LayerDims& d, LayerContext<T>& c, const T* qkv,
                                      Buffer<T>& gathered) {
  if (d.cp == 1) return qkv_key_values(d, qkv);
  assert(c.cp != nullptr && c.cp->size() == d.cp);
  const KeyValues<const T*> mine = qkv_key_values(d, qkv);
  const int64_t w = kv_width(d), kv = w / 2;
  Buffer<T> part =
      c.allocate_for_overwrite(MemoryCategory::buffers, d.tokens() * w, "K and V to all-gather");
  Kernels<T>& dev = c.dev();
  dev.copy(matrix(part.data(), d.tokens(), kv, w),
           matrix(qkv + mine.k, d.tokens(), kv, mine.stride));
  dev.copy(matrix(part.data() + kv, d.tokens(), kv, w),
           matrix(qkv + mine.v, d.tokens(), kv, mine.stride));
  Buffer<T> ranked = c.allocate_for_overwrite(MemoryCategory::buffers, d.cp * d.tokens() * w,
                                              "all-gathered K and V");
  c.cp->all_gather(part.span(), ranked.span());
  part = {};
  gathered = c.allocate_for_overwrite(MemoryCategory::buffers, d.cp * d.tokens() * w,
                                      "K and V of the sequence");
  reorder_rows(dev, d, ranked.data(), gathered.data(), true);
  return {gathered.data(), w, 0, kv};
}

template <class T>
KeyValues<T*> key_value_grads(const LayerDims& d, LayerContext<T>& c, T* dqkv, Buffer<T>& whole) {
  if (d.cp == 1) return qkv_key_values(d, dqkv);
  const int64_t w = kv_width(d);
  whole = c.allocate_for_overwrite(MemoryCategory::buffers, d.cp * d.tokens() * w,
                                   "dK and dV of the sequence");
  return {whole.data(), w, 0, w / 2};
}

template <class T>
void reduce_key_value_grads(const LayerDims& d, LayerContext<T>& c, const Buffer<T>& whole,
                            T* dqkv) {
  if (d.cp == 1) return;
  assert(c.cp != nullptr && c.cp->size() == d.cp);
  const int64_t w = kv_width(d), kv = w / 2;
  Buffer<T> ranked = c.allocate_for_overwrite(MemoryCategory::buffers, d.cp * d.tokens() * w,
                                              "dK and dV to reduce-scatter");
  Kernels<T>& dev = c.dev();
  reorder_rows(dev, d, whole.data(), ranked.data(), false);
  Buffer<T> part =
      c.allocate_for_overwrite(MemoryCategory::buffers, d.tokens() * w, "reduce-scattered dK, dV");
  c.cp->reduce_scatter(ranked.span(), part.span());
  const KeyValues<T*> mine = qkv_key_values(d, dqkv);
  dev.copy(matrix(dqkv + mine.k, d.tokens(), kv, mine.stride),
           matrix(static_cast<const T*>(part.data()), d.tokens(), kv, w));
  dev.copy(matrix(dqkv + mine.v, d.tokens(), kv, mine.stride),
           matrix(static_cast<const T*>(part.data()) + kv, d.tokens(), kv, w));
}

#define SHARDPLAN_INSTANTIATE(T)                                                                  \
  template KeyValues<const T*> gather_key_values<T>(const LayerDims&, LayerContext<T>&, const T*, \
                                                    Buffer<T>&);                                  \
  template KeyValues<T*> key_value_grads<T>(const LayerDims&, LayerContext<T>&, T*, Buffer<T>&);  \
  template void reduce_key_value_grads<T>(const LayerDims&, LayerContext<T>&, const Buffer<T>&, T*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
