#include "executor/state/param_layout.h"

#include <fmt/format.h>

#include <cassert>
#include <numeric>

#include "core/error.h"
#include "core/schedule.h"

namespace shardplan {

RankShard whole_model(const Model& m) {
  RankShard s;
  s.layers.resize(static_cast<size_t>(m.num_layers));
  std::iota(s.layers.begin(), s.layers.end(), 0);
  return s;
}

ElementRange split_range(int64_t length, int parts, int index) {
  assert(parts > 0 && index >= 0 && index < parts);
  const int64_t base = length / parts, extra = length % parts;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

const ParamTensor& ParamLayout::get(std::string_view name) const {
  for (const ParamTensor& t : tensors)
    if (t.name == name) return t;
  assert(false && "no such parameter tensor");
  return tensors.front();
}

bool ParamLayout::has(std::string_view name) const {
  for (const ParamTensor& t : tensors)
    if (t.name == name) return true;
  return false;
}

int64_t ParamLayout::count(ParamComponent c) const {
  int64_t n = 0;
  for (const ParamTensor& t : tensors)
    if (t.component == c) n += t.count();
  return n;
}

ElementRange ParamLayout::layer_range(int layer) const {
  ElementRange r{total, 0};
  for (const ParamTensor& t : tensors) {
    if (t.layer != layer) continue;
    r.begin = std::min(r.begin, t.offset);
    r.end = std::max(r.end, t.offset + t.count());
  }
  assert(r.end > r.begin && "the rank does not hold this layer");
  return r;
}

int64_t full_index(const ParamTensor& t, int64_t i) {
  const int64_t r = i / t.local_cols, c = i % t.local_cols;
  return (t.row_begin + r) * t.cols + t.col_begin + c;
}

namespace {

void check_supported(const Model& m, int tp) {
  if (m.is_moe())
    throw InputError("model", "num_local_experts", "the executor runs dense models only",
                     "plan and price it with estimate/plan; execute a dense model");
  if (m.position_embedding != PositionEmbedding::learned)
    throw InputError("model", "position_embedding",
                     "the executor implements learned position embeddings only");
  if (m.num_heads % tp != 0 || m.num_kv_heads % tp != 0)
    throw InputError(
        "model", "num_attention_heads",
        fmt::format("tp={} does not divide num_attention_heads={} and num_key_value_heads={}", tp,
                    m.num_heads, m.num_kv_heads));
}

// Appends tensors and assigns offsets in order.
struct LayoutBuilder {
  const RankShard& shard;
  ParamLayout out;

  void add(std::string name, ParamComponent component, ParamInit init, int layer, int64_t rows,
           int64_t cols, TensorSplit split, std::string init_name = "") {
    ParamTensor t;
    t.init_name = init_name.empty() ? name : std::move(init_name);
    t.name = std::move(name);
    t.component = component;
    t.init = init;
    t.layer = layer;
    t.rows = rows;
    t.cols = cols;
    t.split = split;
    const ElementRange r =
        split_range(split == TensorSplit::rows ? rows : cols, shard.tp, shard.tp_rank);
    t.row_begin = split == TensorSplit::rows ? r.begin : 0;
    t.local_rows = split == TensorSplit::rows ? r.count() : rows;
    t.col_begin = split == TensorSplit::cols ? r.begin : 0;
    t.local_cols = split == TensorSplit::cols ? r.count() : cols;
    t.offset = out.total;
    out.total += t.count();
    out.tensors.push_back(std::move(t));
  }

  void add_norm(const Model& m, const std::string& prefix, int layer) {
    add(prefix + ".weight", ParamComponent::norms, ParamInit::ones, layer, m.hidden, 1,
        TensorSplit::replicated);
    if (m.norm == Norm::layernorm)
      add(prefix + ".bias", ParamComponent::norms, ParamInit::zeros, layer, m.hidden, 1,
          TensorSplit::replicated);
  }

  void add_layer(const Model& m, int layer) {
    const std::string p = fmt::format("layers.{}.", layer);
    const int64_t q_rows = m.num_heads * m.head_dim, kv_rows = m.num_kv_heads * m.head_dim;
    const auto attn = ParamComponent::attention, mlp = ParamComponent::mlp;
    add_norm(m, p + "ln1", layer);
    add(p + "attn.wq", attn, ParamInit::normal, layer, q_rows, m.hidden, TensorSplit::rows);
    add(p + "attn.wk", attn, ParamInit::normal, layer, kv_rows, m.hidden, TensorSplit::rows);
    add(p + "attn.wv", attn, ParamInit::normal, layer, kv_rows, m.hidden, TensorSplit::rows);
    if (m.qkv_bias) {
      add(p + "attn.bq", attn, ParamInit::zeros, layer, q_rows, 1, TensorSplit::rows);
      add(p + "attn.bk", attn, ParamInit::zeros, layer, kv_rows, 1, TensorSplit::rows);
      add(p + "attn.bv", attn, ParamInit::zeros, layer, kv_rows, 1, TensorSplit::rows);
    }
    add(p + "attn.wo", attn, ParamInit::residual_normal, layer, m.hidden, q_rows,
        TensorSplit::cols);
    if (m.out_bias)
      add(p + "attn.bo", attn, ParamInit::zeros, layer, m.hidden, 1, TensorSplit::replicated);
    add_norm(m, p + "ln2", layer);
    const bool gated = m.activation == Activation::swiglu;
    if (gated)
      add(p + "mlp.w_gate", mlp, ParamInit::normal, layer, m.ffn_hidden, m.hidden,
          TensorSplit::rows);
    add(p + "mlp.w_fc1", mlp, ParamInit::normal, layer, m.ffn_hidden, m.hidden, TensorSplit::rows);
    if (m.mlp_bias) {
      if (gated)
        add(p + "mlp.b_gate", mlp, ParamInit::zeros, layer, m.ffn_hidden, 1, TensorSplit::rows);
      add(p + "mlp.b_fc1", mlp, ParamInit::zeros, layer, m.ffn_hidden, 1, TensorSplit::rows);
    }
    add(p + "mlp.w_fc2", mlp, ParamInit::residual_normal, layer, m.hidden, m.ffn_hidden,
        TensorSplit::cols);
    if (m.mlp_bias)
      add(p + "mlp.b_fc2", mlp, ParamInit::zeros, layer, m.hidden, 1, TensorSplit::replicated);
  }
};

}  // namespace

RankShard rank_shard(const Model& m, const Layout& l, const RankCoord& c) {
  RankShard s;
  s.tp = l.tp;
  s.tp_rank = c.tp;
  for (int chunk = 0; chunk < l.vpp; ++chunk) {
    const LayerRange r = virtual_stage_layers(m, l, virtual_stage(l, c.pp, chunk));
    for (int layer = r.begin; layer < r.end; ++layer) s.layers.push_back(layer);
  }
  s.embedding = c.pp == stage_slot(l, 0).pp_rank;
  s.head = c.pp == last_stage_rank(l);
  return s;
}

ParamLayout param_layout(const Model& m, const RankShard& shard) {
  check_supported(m, shard.tp);
  LayoutBuilder b{shard, {}};
  if (shard.embedding) {
    b.add("wte", ParamComponent::embedding, ParamInit::normal, -1, m.vocab, m.hidden,
          TensorSplit::rows);
    b.add("wpe", ParamComponent::position_embedding, ParamInit::normal, -1, m.max_seq, m.hidden,
          TensorSplit::replicated);
  }
  for (int layer : shard.layers) b.add_layer(m, layer);
  if (shard.head) {
    b.add_norm(m, "final_norm", -1);
    if (!m.tied_embeddings)
      b.add("lm_head", ParamComponent::head, ParamInit::normal, -1, m.vocab, m.hidden,
            TensorSplit::rows);
    else if (!shard.embedding)
      b.add("lm_head", ParamComponent::head, ParamInit::normal, -1, m.vocab, m.hidden,
            TensorSplit::rows, "wte");
  }
  return std::move(b.out);
}

}  // namespace shardplan
