#include "executor/layers/block.h"

#include "executor/layers/attention.h"
#include "executor/layers/context_parallel.h"
#include "executor/layers/linear.h"
#include "executor/layers/tp_collectives.h"

namespace shardplan {

namespace {

// A norm feeding a column-parallel layer, for the backward pass: its input (this rank's tokens),
// its output for every token, its gain, and the gradients of its gain and bias.
template <class T>
struct NormFeed {
  const T* x;
  const T* out_all_tokens;
  const T* weight;
  T* dweight;
  T* dbias;
};

// Back through norm → column-parallel layer out = norm(x)·Wᵀ + b: from dout [tokens, out_cols]
// to dx += d x [local_tokens, hidden]. The partial sums of d norm(x) are all-reduced (reduce-
// scattered under sequence parallelism) before the norm's backward. `defer`: where the weight
// gradient goes under a split backward.
template <class T>
void column_parallel_backward(const LayerDims& d, const NormFeed<T>& norm, const char* name,
                              const T* w, int64_t out_cols, const T* dout, T* dw, T* db, T* dx,
                              LayerContext<T>& c, Deferral<T> defer) {
  const int64_t N = d.tokens(), L = d.local_tokens(), H = d.hidden;
  Buffer<T> dnorm_out =
      c.allocate_for_overwrite(MemoryCategory::buffers, L * H, "norm output gradient");
  Buffer<T> partial;
  linear_backward<T>(
      c.dev(), name, norm.out_all_tokens, w, dout, N, H, out_cols,
      partial_sums(d, c, dnorm_out.data(), partial, "column-parallel input gradient partial sums"),
      dw, db, c.matmul_stats, defer);
  reduce_partial_sums(d, c, partial, dnorm_out.data());
  partial = {};
  c.dev().norm_backward(d.norm, norm.x, norm.weight, dnorm_out.data(), L, H, dx, norm.dweight,
                        norm.dbias);
}

}  // namespace

template <class T>
int64_t BlockSaved<T>::bytes() const {
  int64_t n = 0;
  for (const Buffer<T>* b : {&x, &h1, &qkv, &probs, &ctx, &x1, &h2, &u, &a}) n += b->bytes();
  return n;
}

int64_t block_saved_bytes(const LayerDims& d, Recompute mode, int64_t bytes_per_element) {
  const int64_t L = d.local_tokens(), N = d.tokens(), H = d.hidden;
  if (mode == Recompute::full) return L * H * bytes_per_element;
  const int64_t stream = 4 * L * H;  // x, h1, x1, h2
  const int64_t parallel =
      N * (d.qkv_width() + d.heads * d.head_dim + d.fc1_width() + d.ffn);  // qkv, ctx, u, a
  const int64_t probs = mode == Recompute::none ? attention_probs_count(d) : 0;
  return (stream + parallel + probs) * bytes_per_element;
}

template <class T>
Buffer<T> block_forward(const LayerDims& d, const BlockTensors<const T*>& w, Buffer<T> x,
                        Recompute mode, BlockSaved<T>& s, LayerContext<T>& c) {
  const int64_t N = d.tokens(), L = d.local_tokens(), H = d.hidden, C = d.heads * d.head_dim;
  // Tensors that backward reads are activations unless full recomputation will make them again.
  const MemoryCategory kept =
      mode == Recompute::full ? MemoryCategory::buffers : MemoryCategory::activations;
  // Every tensor of the block is its kernel's output, written in full before it is read.
  const auto keep = [&](int64_t n, const char* what) {
    return c.allocate_for_overwrite(kept, n, what);
  };
  s = BlockSaved<T>{};
  Kernels<T>& dev = c.dev();

  // Attention branch: x1 = x + Wo·attn(Wqkv·ln1(x)) + bo.
  s.h1 = keep(L * H, "ln1 output");
  dev.norm_forward(d.norm, x.data(), w.ln1_weight, w.ln1_bias, L, H, s.h1.data());
  {
    Buffer<T> gathered;
    const T* h1 = gather_tokens(d, c, s.h1.data(), gathered);
    s.qkv = keep(N * d.qkv_width(), "qkv");
    linear_forward<T>(dev, "qkv", h1, w.w_qkv, w.b_qkv, N, H, d.qkv_width(), s.qkv.data(),
                      c.matmul_stats);
  }
  {
    Buffer<T> gathered;
    const KeyValues<const T*> kv = gather_key_values(d, c, s.qkv.data(), gathered);
    s.probs = c.allocate_for_overwrite(
        mode == Recompute::none ? MemoryCategory::activations : MemoryCategory::buffers,
        attention_probs_count(d), "attention probabilities");
    s.ctx = keep(N * C, "attention context");
    attention_forward(dev, d, s.qkv.data(), kv, s.probs.data(), s.ctx.data(), c.matmul_stats);
  }
  if (mode != Recompute::none) s.probs = {};
  {
    s.x1 = keep(L * H, "attention residual");
    Buffer<T> partial;
    linear_forward<T>(dev, "proj", s.ctx.data(), w.w_o, nullptr, N, C, H,
                      partial_sums(d, c, s.x1.data(), partial, "attention projection partial sums"),
                      c.matmul_stats);
    reduce_partial_sums(d, c, partial, s.x1.data());
  }
  dev.residual_add(s.x1.data(), x.data(), w.b_o, L, H);

  // MLP branch: y = x1 + W2·act(W1·ln2(x1)) + b2.
  s.h2 = keep(L * H, "ln2 output");
  dev.norm_forward(d.norm, s.x1.data(), w.ln2_weight, w.ln2_bias, L, H, s.h2.data());
  {
    Buffer<T> gathered;
    const T* h2 = gather_tokens(d, c, s.h2.data(), gathered);
    s.u = keep(N * d.fc1_width(), "fc1 output");
    linear_forward<T>(dev, "fc1", h2, w.w_fc1, w.b_fc1, N, H, d.fc1_width(), s.u.data(),
                      c.matmul_stats);
  }
  s.a = keep(N * d.ffn, "mlp activation");
  dev.activation_forward(d.activation, s.u.data(), N, d.ffn, s.a.data());
  Buffer<T> y = c.allocate_for_overwrite(MemoryCategory::activations, L * H, "layer output");
  {
    Buffer<T> partial;
    linear_forward<T>(dev, "fc2", s.a.data(), w.w_fc2, nullptr, N, d.ffn, H,
                      partial_sums(d, c, y.data(), partial, "fc2 partial sums"), c.matmul_stats);
    reduce_partial_sums(d, c, partial, y.data());
  }
  dev.residual_add(y.data(), s.x1.data(), w.b_fc2, L, H);

  if (mode == Recompute::full) s = BlockSaved<T>{};
  s.mode = mode;
  s.x = std::move(x);
  return y;
}

template <class T>
Buffer<T> block_backward(const LayerDims& d, const BlockTensors<const T*>& w,
                         const BlockTensors<T*>& grad, BlockSaved<T>&& saved, const T* dy,
                         LayerContext<T>& c) {
  BlockSaved<T> s = std::move(saved);  // freed as backward goes, the rest on return
  if (s.mode == Recompute::full) block_forward(d, w, std::move(s.x), Recompute::none, s, c);
  const int64_t N = d.tokens(), L = d.local_tokens(), H = d.hidden, C = d.heads * d.head_dim;
  // Each gradient is its kernel's output, written in full before it is read (attention_backward
  // zeroes the dK and dV it accumulates into).
  const auto scratch = [&](int64_t n, const char* what) {
    return c.allocate_for_overwrite(MemoryCategory::buffers, n, what);
  };
  Kernels<T>& dev = c.dev();

  // The residual stream's gradient: dy, plus ln2's backward (→ d x1), plus ln1's (→ d x).
  Buffer<T> dx = scratch(L * H, "layer input gradient");
  dev.copy(dx.data(), dy, L * H);

  // MLP branch, from dy and ln2's output for every token.
  if (grad.b_fc2 != nullptr) dev.bias_backward(dy, L, H, grad.b_fc2);
  {
    // Under a split backward W takes what it reads where this layer owns it (the saved tensors,
    // the gathered ones, its own gradients); linear_backward copies the rest.
    GatheredPair<T> g = gather_token_pair(d, c, dy, s.h2.data());
    Buffer<T> da = scratch(N * d.ffn, "mlp activation gradient");
    linear_backward<T>(dev, "fc2", s.a.data(), w.w_fc2, g.first, N, d.ffn, H, da.data(), grad.w_fc2,
                       nullptr, c.matmul_stats, {c.weight_grads, &s.a, &g.first_buffer});
    s.a = {};
    Buffer<T> du = scratch(N * d.fc1_width(), "fc1 output gradient");
    dev.activation_backward(d.activation, s.u.data(), da.data(), N, d.ffn, du.data());
    da = {};
    s.u = {};
    const NormFeed<T> ln2{s.x1.data(), g.second, w.ln2_weight, grad.ln2_weight, grad.ln2_bias};
    column_parallel_backward(d, ln2, "fc1", w.w_fc1, d.fc1_width(), du.data(), grad.w_fc1,
                             grad.b_fc1, dx.data(), c,
                             {c.weight_grads, d.sequence_parallel ? &g.second_buffer : &s.h2, &du});
  }

  // Attention branch, from d x1 (now in dx) and ln1's output for every token.
  if (grad.b_o != nullptr) dev.bias_backward(dx.data(), L, H, grad.b_o);
  GatheredPair<T> g = gather_token_pair(d, c, dx.data(), s.h1.data());
  Buffer<T>* const h1_owner = d.sequence_parallel ? &g.second_buffer : &s.h1;
  Buffer<T> dqkv;
  {
    // Under cp, K and V again before the attention core (the out-projection and attention), as
    // the schedule places the backward's all-gather.
    Buffer<T> gathered, dkv_whole;
    const KeyValues<const T*> kv = gather_key_values(d, c, s.qkv.data(), gathered);
    Buffer<T> dctx = scratch(N * C, "attention context gradient");
    // Without SP, proj's output gradient is dx itself, which ln1's backward adds to: W copies it.
    linear_backward<T>(dev, "proj", s.ctx.data(), w.w_o, g.first, N, C, H, dctx.data(), grad.w_o,
                       nullptr, c.matmul_stats, {c.weight_grads, &s.ctx, &g.first_buffer});
    s.ctx = {};
    if (s.probs.empty()) {  // selective recomputation
      s.probs = c.allocate_for_overwrite(MemoryCategory::activations, attention_probs_count(d),
                                         "recomputed attention probabilities");
      attention_forward<T>(dev, d, s.qkv.data(), kv, s.probs.data(), nullptr, c.matmul_stats);
    }
    dqkv = scratch(N * d.qkv_width(), "qkv gradient");
    const KeyValues<T*> dkv = key_value_grads(d, c, dqkv.data(), dkv_whole);
    Buffer<T> dscores = scratch(attention_scratch_count(dev, d), "attention score gradient");
    attention_backward(dev, d, s.qkv.data(), kv, s.probs.data(), dctx.data(), dqkv.data(), dkv,
                       dscores.data(), c.matmul_stats);
    reduce_key_value_grads(d, c, dkv_whole, dqkv.data());
  }
  s.probs = {};
  s.qkv = {};
  const NormFeed<T> ln1{s.x.data(), g.second, w.ln1_weight, grad.ln1_weight, grad.ln1_bias};
  column_parallel_backward(d, ln1, "qkv", w.w_qkv, d.qkv_width(), dqkv.data(), grad.w_qkv,
                           grad.b_qkv, dx.data(), c, {c.weight_grads, h1_owner, &dqkv});
  return dx;
}

#define SHARDPLAN_INSTANTIATE(T)                                                                  \
  template struct BlockSaved<T>;                                                                  \
  template Buffer<T> block_forward<T>(const LayerDims&, const BlockTensors<const T*>&, Buffer<T>, \
                                      Recompute, BlockSaved<T>&, LayerContext<T>&);               \
  template Buffer<T> block_backward<T>(const LayerDims&, const BlockTensors<const T*>&,           \
                                       const BlockTensors<T*>&, BlockSaved<T>&&, const T*,        \
                                       LayerContext<T>&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
