#include "simulator/activation_memory.h"

namespace shardplan {

namespace {

constexpr int64_t kMaskBytes = 1;         // dropout masks are stored as bytes (Korthikanti §4.1)
constexpr int64_t kSoftmaxStatBytes = 4;  // flash attention's fp32 log-sum-exp per head and query

// The attention block (Korthikanti §4.1 "Attention block", 11sbh + 5as²b for GPT without TP).
int64_t attention_bytes(const Model& m, int64_t e, const RankShape& r, Recompute recompute,
                        const ExecutionOptions& x) {
  const int64_t heads = shard_size(m.num_heads, r.tp);
  const int64_t q = heads * m.head_dim;
  const int64_t kv = shard_size(m.num_kv_heads, r.tp) * m.head_dim;
  const int64_t t = r.tokens();
  const int64_t rt = r.region_tokens();
  int64_t bytes = e * rt * m.hidden;  // input of the QKV projection (the norm's output): 2sbh
  bytes += e * t * (q + kv);          // Q and K, inputs of QKᵀ: 4sbh
  bytes += e * t * kv;                // V, input of the product with the probabilities: 2sbh
  bytes += e * t * q;                 // input of the output projection: 2sbh
  if (x.dropout) bytes += kMaskBytes * rt * m.hidden;  // dropout mask after the projection: sbh
  if (is_flash(x.attention)) {
    bytes += kSoftmaxStatBytes * r.batch * heads * r.seq;
  } else if (recompute != Recompute::selective) {
    // softmax output 2as²b, dropout mask as²b, dropout output 2as²b; without dropout only the
    // softmax output, which feeds both the product with V and the softmax backward.
    const int64_t scores = r.batch * heads * r.seq * r.kv_seq;
    bytes += (x.dropout ? 2 * e + kMaskBytes : e) * scores;
  }
  return bytes;
}

// The MLP block (Korthikanti §4.1 "MLP", 19sbh for GPT): its input, the activation's input and
// output, the dropout mask. Fused SwiGLU keeps gate and up outputs (2·ffn) and their product
// (ffn); eager silu(gate)·up also keeps silu's output, the product's other operand (ffn).
int64_t mlp_bytes(const Model& m, int64_t e, const RankShape& r, bool moe_layer,
                  const ExecutionOptions& x) {
  const int64_t rt = r.region_tokens();
  const int64_t act_widths = m.activation != Activation::swiglu ? 2 : x.fused_swiglu ? 3 : 4;
  int64_t bytes = e * rt * m.hidden;  // MLP (or router and dispatch) input: 2sbh
  if (moe_layer) {
    // Balanced routing: the ep ranks receive ep·tokens·top_k token copies over num_experts/ep
    // experts each, i.e. tokens·top_k per rank; each copy keeps its input and activations.
    const int64_t copies = r.tokens() * m.moe.top_k;
    bytes += e * copies * (m.hidden + act_widths * shard_size(m.moe.expert_ffn_hidden, r.tp));
  } else {
    bytes += e * r.tokens() * act_widths * shard_size(m.ffn_hidden, r.tp);  // 16sbh for ffn = 4h
  }
  if (x.dropout) bytes += kMaskBytes * rt * m.hidden;  // sbh
  return bytes;
}

}  // namespace

int64_t layer_activation_bytes(const Model& m, Dtype dtype, const RankShape& r, bool moe_layer,
                               Recompute recompute, const ExecutionOptions& x) {
  const int64_t e = dtype_bytes(dtype);
  // Full recomputation keeps only the layer's input (Korthikanti Table 2: 2sbh, split over tp
  // under sequence parallelism since the checkpointed input is the sequence-parallel shard).
  if (recompute == Recompute::full) return e * r.region_tokens() * m.hidden;
  const int64_t norms = 2 * e * r.region_tokens() * m.hidden;  // two norm inputs: 4sbh
  return norms + attention_bytes(m, e, r, recompute, x) + mlp_bytes(m, e, r, moe_layer, x);
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
  // Casting fp32 logits to fp32 copies nothing.
  const bool second_copy =
      (k == CrossEntropyKernel::pytorch || k == CrossEntropyKernel::nanotron) && e < f;
  return {f * logits, (e + (second_copy ? f : 0)) * logits};
}

}  // namespace shardplan
