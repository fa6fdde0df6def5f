#include "tests/executor/chunk.h"

#include <span>

#include "executor/layers/embedding.h"

namespace shardplan {

namespace {
ElementRange rows_of(const ParamTensor& t) {
  return {t.row_begin, t.row_begin + t.local_rows};
}
}  // namespace

ModelChunk whole_model_chunk(const Model& m) {
  return {whole_model(m).layers, true, true};
}

template <class T>
ChunkOutput<T> chunk_forward(const ModelChunk& chunk, const ParamLayout& layout, const T* params,
                             const LayerDims& d, MicroBatchTokens tokens, Buffer<T> x,
                             Recompute mode, ChunkSaved<T>& saved, LayerContext<T>& c) {
  if (chunk.embedding) {
    const ParamTensor& wte = layout.get("wte");
    x = embedding_forward(d, tokens.inputs, params + wte.offset, rows_of(wte),
                          params + layout.get("wpe").offset, c);
  }
  saved.layers.resize(chunk.layers.size());
  for (size_t i = 0; i < chunk.layers.size(); ++i)
    x = block_forward(d, block_tensors(layout, chunk.layers[i], params), std::move(x), mode,
                      saved.layers[i], c);
  ChunkOutput<T> out;
  if (chunk.head)
    out.loss_sum = head_forward(d, head_tensors(layout, params), head_vocab(layout), std::move(x),
                                tokens.targets, saved.head, c);
  else
    out.activations = std::move(x);
  return out;
}

template <class T>
Buffer<T> chunk_backward(const ModelChunk& chunk, const ParamLayout& layout, const T* params,
                         T* grads, const LayerDims& d, MicroBatchTokens tokens,
                         ChunkSaved<T>&& saved, const T* dy, compute_t<T> loss_scale,
                         LayerContext<T>& c) {
  ChunkSaved<T> s = std::move(saved);
  Buffer<T> dx;
  if (chunk.head) {
    dx = head_backward(d, head_tensors(layout, params), head_tensors(layout, grads),
                       head_vocab(layout), tokens.targets, std::move(s.head), loss_scale, c);
    dy = dx.data();
  }
  for (size_t i = chunk.layers.size(); i-- > 0;) {
    const int layer = chunk.layers[i];
    dx = block_backward(d, block_tensors(layout, layer, params),
                        block_tensors(layout, layer, grads), std::move(s.layers[i]), dy, c);
    dy = dx.data();
  }
  if (chunk.embedding) {
    const ParamTensor& wte = layout.get("wte");
    embedding_backward(d, tokens.inputs, dy, rows_of(wte), grads + wte.offset,
                       grads + layout.get("wpe").offset, c);
    dx = {};
  }
  return dx;
}

template <class T>
void all_reduce_sequence_parallel_grads(const ParamLayout& layout, T* grads, TpComm<T>& tp) {
  for (const ParamTensor& t : layout.tensors)
    if (t.split == TensorSplit::replicated)
      tp.all_reduce(std::span<T>(grads + t.offset, static_cast<size_t>(t.count())), ReduceOp::sum);
}

#define SHARDPLAN_INSTANTIATE(T)                                                            \
  template ChunkOutput<T> chunk_forward<T>(const ModelChunk&, const ParamLayout&, const T*, \
                                           const LayerDims&, MicroBatchTokens, Buffer<T>,   \
                                           Recompute, ChunkSaved<T>&, LayerContext<T>&);    \
  template Buffer<T> chunk_backward<T>(const ModelChunk&, const ParamLayout&, const T*, T*, \
                                       const LayerDims&, MicroBatchTokens, ChunkSaved<T>&&, \
                                       const T*, compute_t<T>, LayerContext<T>&);           \
  template void all_reduce_sequence_parallel_grads<T>(const ParamLayout&, T*, TpComm<T>&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
