#include "simulator/model_flops.h"

namespace shardplan {

namespace {

double as_double(int64_t v) {
  return static_cast<double>(v);
}

// QKᵀ and the product with V over the full s×s scores: 2·s²·(a·d) each.
double attention_core_flops(const Model& m, double s) {
  return 4 * s * s * as_double(int64_t{m.num_heads} * m.head_dim);
}

// Forward matmul FLOPs of one layer for one sequence of s tokens, attention over the full s×s.
double layer_forward_flops(const Model& m, double s, bool moe) {
  const double h = as_double(m.hidden);
  const double q = as_double(int64_t{m.num_heads} * m.head_dim);
  const double kv = as_double(int64_t{m.num_kv_heads} * m.head_dim);
  const double mlp_widths = m.activation == Activation::swiglu ? 3 : 2;  // up (+gate) and down
  const double projections = 2 * s * h * (q + 2 * kv) + 2 * s * q * h;
  const double mlp =
      moe ? 2 * s * h * as_double(m.moe.num_experts) +
                m.moe.top_k * 2 * s * h * mlp_widths * as_double(m.moe.expert_ffn_hidden)
          : 2 * s * h * mlp_widths * as_double(m.ffn_hidden);
  return projections + attention_core_flops(m, s) + mlp;
}

// Forward matmul FLOPs of every layer of the model for one sequence.
double layers_forward_flops(const Model& m, double s) {
  const int moe_layers = m.num_moe_layers();
  return (m.num_layers - moe_layers) * layer_forward_flops(m, s, false) +
         moe_layers * layer_forward_flops(m, s, true);
}

}  // namespace

double model_flops_per_step(const Model& m, int64_t global_batch, int64_t seq_len) {
  const double s = as_double(seq_len);
  const double layers = layers_forward_flops(m, s);
  const double head = 2 * s * as_double(m.hidden) * as_double(m.vocab);
  return 3 * as_double(global_batch) * (layers + head);  // forward + backward (2× forward)
}

double recompute_flops_per_step(const Model& m, int64_t global_batch, int64_t seq_len,
                                Recompute r) {
  const double s = as_double(seq_len);
  switch (r) {
    case Recompute::none:
      return 0;
    case Recompute::selective:
      return as_double(global_batch) * m.num_layers * attention_core_flops(m, s);
    case Recompute::full:
      return as_double(global_batch) * layers_forward_flops(m, s);
  }
  return 0;
}

}  // namespace shardplan
