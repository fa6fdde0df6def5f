#include "executor/lm_head.h"

#include "executor/linear.h"
#include "executor/tp_collectives.h"

namespace shardplan {

ElementRange head_vocab(const ParamLayout& layout) {
  const ParamTensor& t = layout.get(layout.has("lm_head") ? "lm_head" : "wte");
  return {t.row_begin, t.row_begin + t.local_rows};
}

template <class T>
double head_forward(const LayerDims& d, const HeadTensors<const T*>& w, ElementRange vocab,
                    Buffer<T> x, const int32_t* targets, HeadSaved<T>& s, LayerContext<T>& c) {
  const int64_t H = d.hidden, N = d.tokens(), V = vocab.count();
  const auto act = [&](int64_t n, const char* what) {
    return c.allocate_for_overwrite(MemoryCategory::activations, n, what);
  };
  s.h = act(d.local_tokens() * H, "final norm output");
  Kernels<T>& dev = c.dev();
  dev.norm_forward(d.norm, x.data(), w.norm_weight, w.norm_bias, d.local_tokens(), H, s.h.data());
  s.x = std::move(x);
  Buffer<T> gathered;
  const T* h = gather_tokens(d, c, s.h.data(), gathered);
  s.exp_logits = act(N * V, "logits");
  linear_forward<T>(dev, h, w.vocab_weight, nullptr, N, H, V, s.exp_logits.data(), c.matmul_stats);

  // Megatron-LM's VocabParallelCrossEntropy: all-reduce the row maxima, then (one all-reduce of
  // both) the sums of exponentials and the target logits, which only the rank holding it has.
  Buffer<T> row_max = c.allocate_for_overwrite(MemoryCategory::buffers, N, "logit row max");
  dev.logits_row_max(s.exp_logits.data(), N, V, row_max.data());
  c.tp.all_reduce(row_max.span(), ReduceOp::max);
  // Zeroed: a rank's target logits are those of the targets in its vocabulary rows, the rest 0.
  Buffer<T> sums =
      c.allocate(MemoryCategory::buffers, 2 * N, "softmax denominators and target logits");
  T* sum_exp = sums.data();
  T* target = sums.data() + N;
  dev.logits_target(s.exp_logits.data(), targets, N, V, vocab, target);
  dev.logits_exponentiate(s.exp_logits.data(), N, V, row_max.data(), sum_exp);
  c.tp.all_reduce(sums.span(), ReduceOp::sum);
  s.sum_exp = act(N, "softmax denominators");
  dev.copy(s.sum_exp.data(), sum_exp, N);
  return dev.token_loss_sum(row_max.data(), sum_exp, target, N);
}

template <class T>
Buffer<T> head_backward(const LayerDims& d, const HeadTensors<const T*>& w,
                        const HeadTensors<T*>& grad, ElementRange vocab, const int32_t* targets,
                        HeadSaved<T>&& saved, T loss_scale, LayerContext<T>& c) {
  HeadSaved<T> s = std::move(saved);  // freed on return
  const int64_t H = d.hidden, N = d.tokens(), V = vocab.count();
  Kernels<T>& dev = c.dev();
  dev.logits_backward(s.exp_logits.data(), s.sum_exp.data(), targets, N, V, vocab, loss_scale);
  Buffer<T> gathered;
  const T* h = gather_tokens(d, c, s.h.data(), gathered);
  // The final norm's output gradient: written by the GEMM when tp = 1; otherwise reduced from its
  // partial sums once the logits are freed (the memory peak of the backward is here).
  const auto norm_output_grad = [&] {
    return c.allocate_for_overwrite(MemoryCategory::buffers, d.local_tokens() * H,
                                    "final norm output gradient");
  };
  Buffer<T> dh = d.tp == 1 ? norm_output_grad() : Buffer<T>{};
  Buffer<T> dh_partial;
  linear_backward<T>(dev, h, w.vocab_weight, s.exp_logits.data(), N, H, V,
                     partial_sums(d, c, dh.data(), dh_partial, "head input gradient partial sums"),
                     grad.vocab_weight, nullptr, c.matmul_stats);
  s.exp_logits = {};
  gathered = {};
  if (d.tp > 1) dh = norm_output_grad();
  reduce_partial_sums(d, c, dh_partial, dh.data());
  dh_partial = {};
  // Zeroed: the norm's backward adds into it.
  Buffer<T> dx = c.allocate(MemoryCategory::buffers, d.local_tokens() * H, "head input gradient");
  dev.norm_backward(d.norm, s.x.data(), w.norm_weight, dh.data(), d.local_tokens(), H, dx.data(),
                    grad.norm_weight, grad.norm_bias);
  return dx;
}

#define SHARDPLAN_INSTANTIATE(T)                                                                \
  template double head_forward<T>(const LayerDims&, const HeadTensors<const T*>&, ElementRange, \
                                  Buffer<T>, const int32_t*, HeadSaved<T>&, LayerContext<T>&);  \
  template Buffer<T> head_backward<T>(const LayerDims&, const HeadTensors<const T*>&,           \
                                      const HeadTensors<T*>&, ElementRange, const int32_t*,     \
                                      HeadSaved<T>&&, T, LayerContext<T>&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
