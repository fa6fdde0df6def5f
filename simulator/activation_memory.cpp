#include "simulator/activation_memory.h"

namespace shardplan {

namespace {

constexpr int64_t kMaskBytes = 1;         // dropout masks are stored as bytes (Korthikanti §4.1)
constexpr int64_t kSoftmaxStatBytes = 4;  // flash attention's fp32 log-sum-exp per head and query

// Bytes an element of a linear layer's input (or output gradient) is kept in for its weight
// gradient: Transformer Engine's FP8 linears keep the quantized copy the wgrad GEMM reads, one
// byte (MXFP8's scales, 1/32 of that, left out).
int64_t linear_kept_bytes(int64_t e, Fp8Recipe fp8) {
  return fp8 == Fp8Recipe::none ? e : 1;
}

// The attention block (Korthikanti §4.1 "Attention block", 11sbh + 5as²b for GPT without TP).
void attention_tensors(LayerTensors& out, const Model& m, int64_t e, int64_t li, const RankShape& r,
                       Recompute recompute, const ExecutionOptions& x) {
  const int64_t heads = shard_size(m.num_heads, r.tp);
  const int64_t q = heads * m.head_dim;
  const int64_t kv = shard_size(m.num_kv_heads, r.tp) * m.head_dim;
  const int64_t t = r.tokens();
  const int64_t rt = r.region_tokens();
  out.add(li * rt * m.hidden);  // input of the QKV projection (the norm's output): 2sbh
  out.add(e * t * q);          // Q and K, inputs of QKᵀ: 4sbh
  out.add(e * t * kv);
  out.add(e * t * kv);  // V, input of the product with the probabilities: 2sbh
  if (x.mha_kv_copied && m.num_kv_heads == m.num_heads) {
    // K and V again: the permuted QKV buffer Q is a view of (core/framework.h).
    out.add(e * t * kv);
    out.add(e * t * kv);
  }
  out.add(li * t * q);                                 // input of the output projection: 2sbh
  if (x.dropout) out.add(kMaskBytes * rt * m.hidden);  // dropout mask after the projection: sbh
  if (is_flash(x.attention)) {
    out.add(kSoftmaxStatBytes * r.batch * heads * r.seq);
  } else if (recompute != Recompute::selective) {
    // softmax output 2as²b, dropout mask as²b, dropout output 2as²b; without dropout only the
    // softmax output, which feeds both the product with V and the softmax backward.
    const int64_t scores = r.batch * heads * r.seq * r.kv_seq;
    out.add(e * scores);
    if (x.dropout) {
      out.add(kMaskBytes * scores);
      out.add(e * scores);
    }
  }
}

// The MLP block (Korthikanti §4.1 "MLP", 19sbh for GPT): its input, the activation's input and
// output, the dropout mask. Fused SwiGLU keeps gate and up outputs (2·ffn) and their product
// (ffn); eager silu(gate)·up also keeps silu's output, the product's other operand (ffn).
void mlp_tensors(LayerTensors& out, const Model& m, int64_t e, int64_t li, const RankShape& r,
                 bool moe_layer, const ExecutionOptions& x) {
  const int64_t rt = r.region_tokens();
  const int act_widths = m.activation != Activation::swiglu ? 2 : x.fused_swiglu ? 3 : 4;
  out.add((moe_layer ? e : li) * rt * m.hidden);  // MLP (or router and dispatch) input: 2sbh
  // Balanced routing: the ep ranks receive ep·tokens·top_k token copies over num_experts/ep
  // experts each, i.e. tokens·top_k per rank; each copy keeps its input and activations.
  const int64_t rows = moe_layer ? r.tokens() * m.moe.top_k : r.tokens();
  const int64_t ffn = shard_size(moe_layer ? m.moe.expert_ffn_hidden : m.ffn_hidden, r.tp);
  if (moe_layer) out.add(li * rows * m.hidden);
  // 16sbh for ffn = 4h; the last is fc2's input.
  for (int i = 0; i < act_widths; ++i) out.add((i + 1 < act_widths ? e : li) * rows * ffn);
  if (x.dropout) out.add(kMaskBytes * rt * m.hidden);  // sbh
}

}  // namespace

LayerTensors layer_activation_tensors(const Model& m, Dtype dtype, const RankShape& r,
                                      bool moe_layer, Recompute recompute,
                                      const ExecutionOptions& x, Fp8Recipe fp8) {
  const int64_t e = dtype_bytes(dtype);
  const int64_t li = linear_kept_bytes(e, fp8);
  LayerTensors out;
  // Full recomputation keeps only the layer's input (Korthikanti Table 2: 2sbh, split over tp
  // under sequence parallelism since the checkpointed input is the sequence-parallel shard).
  if (recompute == Recompute::full) {
    out.add(e * r.region_tokens() * m.hidden);
    return out;
  }
  out.add(e * r.region_tokens() * m.hidden);  // the two norm inputs: 4sbh
  attention_tensors(out, m, e, li, r, recompute, x);
  out.add(e * r.region_tokens() * m.hidden);
  mlp_tensors(out, m, e, li, r, moe_layer, x);
  return out;
}

int64_t layer_activation_bytes(const Model& m, Dtype dtype, const RankShape& r, bool moe_layer,
                               Recompute recompute, const ExecutionOptions& x, Fp8Recipe fp8) {
  return layer_activation_tensors(m, dtype, r, moe_layer, recompute, x, fp8).total();
}

LayerTensors layer_backward_buffers(const Model& m, Dtype dtype, const RankShape& r,
                                    bool moe_layer) {
  const int64_t e = dtype_bytes(dtype);
  const int64_t rows = moe_layer ? r.tokens() * m.moe.top_k : r.tokens();
  const int64_t ffn = shard_size(moe_layer ? m.moe.expert_ffn_hidden : m.ffn_hidden, r.tp);
  const int64_t fc1_width = m.activation == Activation::swiglu ? 2 * ffn : ffn;
  LayerTensors out;
  out.add(e * r.region_tokens() * m.hidden);  // the gradient coming in
  out.add(e * rows * fc1_width);              // the MLP's
  out.add(e * r.region_tokens() * m.hidden);  // the layer input's
  return out;
}

LayerTensors layer_weight_grad_tensors(const Model& m, Dtype dtype, const RankShape& r,
                                       bool moe_layer, Fp8Recipe fp8) {
  const int64_t e = dtype_bytes(dtype), t = r.tokens(), h = m.hidden;
  const int64_t li = linear_kept_bytes(e, fp8);  // a linear's X and dY
  const int64_t q = shard_size(m.num_heads, r.tp) * m.head_dim;
  const int64_t kv = shard_size(m.num_kv_heads, r.tp) * m.head_dim;
  LayerTensors out;
  const auto linear = [&](int64_t rows, int64_t in, int64_t out_cols, int64_t bytes) {
    out.add(bytes * rows * in);        // X
    out.add(bytes * rows * out_cols);  // dY
  };
  linear(t, h, q + 2 * kv, li);  // QKV
  linear(t, q, h, li);           // output projection
  const int64_t rows = moe_layer ? t * m.moe.top_k : t;
  const int64_t ffn = shard_size(moe_layer ? m.moe.expert_ffn_hidden : m.ffn_hidden, r.tp);
  if (moe_layer) linear(t, h, m.moe.num_experts, e);  // router, in the compute dtype
  linear(rows, h, m.activation == Activation::swiglu ? 2 * ffn : ffn, li);  // fc1 (gate and up)
  linear(rows, ffn, h, li);                                                 // fc2
  return out;
}

int64_t input_layer_activation_bytes(const Model& m, const RankShape& r,
                                     const ExecutionOptions& x) {
  return x.dropout ? kMaskBytes * r.region_tokens() * m.hidden : 0;
}

int64_t output_layer_activation_bytes(const Model& m, Dtype dtype, const RankShape& r) {
  return 2 * dtype_bytes(dtype) * r.region_tokens() * m.hidden;
}

LossMemory loss_memory(const Model& m, Dtype dtype, const RankShape& r, CrossEntropyKernel k) {
  const int64_t logits = r.tokens() * shard_size(m.vocab, r.tp);
  const int64_t e = dtype_bytes(dtype), f = dtype_bytes(Dtype::fp32);
  // The logits themselves are kept for the backward, which writes their gradient beside them.
  if (k == CrossEntropyKernel::flash_attn) return {e * logits, e * logits};
  // Casting fp32 logits to fp32 copies nothing.
  const bool second_copy =
      (k == CrossEntropyKernel::pytorch || k == CrossEntropyKernel::nanotron) && e < f;
  return {f * logits, (e + (second_copy ? f : 0)) * logits};
}

}  // namespace shardplan
