#include "executor/layers/lm_head.h"

#include <type_traits>

#include "executor/layers/linear.h"
#include "executor/layers/tp_collectives.h"

namespace shardplan {

ElementRange head_vocab(const ParamLayout& layout) {
  const ParamTensor& t = layout.get(layout.has("lm_head") ? "lm_head" : "wte");
  return {t.row_begin, t.row_begin + t.local_rows};
}

namespace {

// The logits [tokens, local vocab] = h·Wᵀ into s.exp_logits in compute_t<T>: written there by the
// GEMM, or under bf16 by the GEMM into bf16 (freed once cast) and cast to fp32.
template <class T>
void logits_forward(LayerContext<T>& c, const T* h, const T* vocab_weight, int64_t N, int64_t H,
                    int64_t V, HeadSaved<T>& s) {
  using C = compute_t<T>;
  s.exp_logits =
      c.alloc.template allocate_for_overwrite<C>(MemoryCategory::activations, N * V, "logits");
  if constexpr (std::is_same_v<T, C>) {
    linear_forward<T>(c.dev(), "lm head", h, vocab_weight, nullptr, N, H, V, s.exp_logits.data(),
                      c.matmul_stats);
  } else {
    Buffer<T> logits = c.allocate_for_overwrite(MemoryCategory::activations, N * V, "bf16 logits");
    linear_forward<T>(c.dev(), "lm head", h, vocab_weight, nullptr, N, H, V, logits.data(),
                      c.matmul_stats);
    c.dev().widen(logits.data(), s.exp_logits.data(), N * V);
  }
}

// n values of compute_t<T> copied by T's kernels: a copy moves bytes, and a C is a whole number of
// T's.
template <class T>
void copy_values(Kernels<T>& dev, compute_t<T>* to, const compute_t<T>* from, int64_t n) {
  constexpr auto k = static_cast<int64_t>(sizeof(compute_t<T>) / sizeof(T));
  static_assert(k * sizeof(T) == sizeof(compute_t<T>));
  dev.copy(reinterpret_cast<T*>(to), reinterpret_cast<const T*>(from), n * k);
}

}  // namespace

template <class T>
double head_forward(const LayerDims& d, const HeadTensors<const T*>& w, ElementRange vocab,
                    Buffer<T> x, const int32_t* targets, HeadSaved<T>& s, LayerContext<T>& c) {
  const int64_t H = d.hidden, N = d.tokens(), V = vocab.count();
  const auto act = [&](int64_t n, const char* what) {
    return c.allocate_for_overwrite(MemoryCategory::activations, n, what);
  };
  s.h = act(d.local_tokens() * H, "final norm output");
  using C = compute_t<T>;
  Kernels<T>& dev = c.dev();
  dev.norm_forward(d.norm, x.data(), w.norm_weight, w.norm_bias, d.local_tokens(), H, s.h.data());
  s.x = std::move(x);
  Buffer<T> gathered;
  const T* h = gather_tokens(d, c, s.h.data(), gathered);
  logits_forward(c, h, w.vocab_weight, N, H, V, s);

  // Megatron-LM's VocabParallelCrossEntropy: all-reduce the row maxima, then (one all-reduce of
  // both) the sums of exponentials and the target logits, which only the rank holding it has; the
  // program's two loss all-reduces (core/schedule_layer.cpp), none when tp = 1.
  TensorAllocator& alloc = c.alloc;
  Buffer<C> row_max =
      alloc.template allocate_for_overwrite<C>(MemoryCategory::buffers, N, "logit row max");
  dev.logits_row_max(s.exp_logits.data(), N, V, row_max.data());
  if (d.tp > 1) c.compute_tp().all_reduce(row_max.span(), ReduceOp::max);
  // Zeroed: a rank's target logits are those of the targets in its vocabulary rows, the rest 0.
  Buffer<C> sums = alloc.template allocate<C>(MemoryCategory::buffers, 2 * N,
                                              "softmax denominators and target logits");
  C* sum_exp = sums.data();
  C* target = sums.data() + N;
  dev.logits_target(s.exp_logits.data(), targets, N, V, vocab, target);
  dev.logits_exponentiate(s.exp_logits.data(), N, V, row_max.data(), sum_exp);
  if (d.tp > 1) c.compute_tp().all_reduce(sums.span(), ReduceOp::sum);
  s.sum_exp = alloc.template allocate_for_overwrite<C>(MemoryCategory::activations, N,
                                                       "softmax denominators");
  copy_values(dev, s.sum_exp.data(), sum_exp, N);
  return dev.token_loss_sum(row_max.data(), sum_exp, target, N);
}

template <class T>
Buffer<T> head_backward(const LayerDims& d, const HeadTensors<const T*>& w,
                        const HeadTensors<T*>& grad, ElementRange vocab, const int32_t* targets,
                        HeadSaved<T>&& saved, compute_t<T> loss_scale, LayerContext<T>& c) {
  HeadSaved<T> s = std::move(saved);  // freed on return
  const int64_t H = d.hidden, N = d.tokens(), V = vocab.count();
  Kernels<T>& dev = c.dev();
  dev.logits_backward(s.exp_logits.data(), s.sum_exp.data(), targets, N, V, vocab, loss_scale);
  // The logits' gradient in T for the GEMMs: in place, or under bf16 cast (the fp32 one freed).
  Buffer<T> narrowed;
  const T* dlogits = nullptr;
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    dlogits = s.exp_logits.data();
  } else {
    narrowed = c.allocate_for_overwrite(MemoryCategory::buffers, N * V, "logits gradient");
    dev.narrow(s.exp_logits.data(), narrowed.data(), N * V);
    s.exp_logits = {};
    dlogits = narrowed.data();
  }
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
  linear_backward<T>(dev, "lm head", h, w.vocab_weight, dlogits, N, H, V,
                     partial_sums(d, c, dh.data(), dh_partial, "head input gradient partial sums"),
                     grad.vocab_weight, nullptr, c.matmul_stats);
  s.exp_logits = {};
  narrowed = {};
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
                                      HeadSaved<T>&&, compute_t<T>, LayerContext<T>&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
