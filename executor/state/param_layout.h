// The flat parameter layout of one rank: where each tensor of its shard (tensor-parallel part, the
// pipeline stage's layers, embedding and head) lies in one contiguous buffer, so data parallelism
// and ZeRO can reduce-scatter and all-gather contiguous ranges and byte counts are exact integers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/placement.h"

namespace shardplan {

// How a tensor is divided over the tp ranks (Shoeybi et al. 2019, §3, Megatron-LM):
//   rows: a column-parallel weight [out, in] split along out (q/k/v, fc1, gate; their biases; the
//         vocab-parallel embedding's vocabulary rows);
//   cols: a row-parallel weight [out, in] split along in (the attention output projection, fc2);
//   replicated: whole on every tp rank (norms, position embedding, the biases of row-parallel
//   layers).
enum class TensorSplit { replicated, rows, cols };

// The ParamCounts field a tensor counts toward (core/model.h).
enum class ParamComponent { embedding, position_embedding, attention, mlp, norms, head };
inline constexpr EnumNames<ParamComponent, 6> kParamComponentNames{
    {{ParamComponent::embedding, "embedding"},
     {ParamComponent::position_embedding, "position_embedding"},
     {ParamComponent::attention, "attention"},
     {ParamComponent::mlp, "mlp"},
     {ParamComponent::norms, "norms"},
     {ParamComponent::head, "head"}}};

// Initial values, as nanoGPT (Karpathy, model.py, GPT._init_weights) initialises GPT-2: weights and
// embeddings N(0, 0.02²), the projections into the residual stream (attention output, fc2) N(0,
// (0.02/√(2·num_layers))²) (Radford et al. 2019, §2.3), biases 0, norm gains 1.
enum class ParamInit { normal, residual_normal, zeros, ones };

struct ParamTensor {
  std::string name;  // "layers.3.attn.wq", "wte", "lm_head"
  std::string
      init_name;  // whose initial values it takes: its own name, or "wte" for a tied LM-head copy
  ParamComponent component = ParamComponent::attention;
  ParamInit init = ParamInit::normal;
  int layer = -1;              // -1 outside the transformer layers
  int64_t rows = 0, cols = 1;  // the full tensor; vectors have cols = 1
  TensorSplit split = TensorSplit::replicated;
  int64_t row_begin = 0, local_rows = 0;  // this rank's rows of the full tensor
  int64_t col_begin = 0, local_cols = 0;  // this rank's columns
  int64_t offset = 0;                     // its first element in the rank's flat buffer

  int64_t count() const { return local_rows * local_cols; }
};

// What one rank holds.
struct RankShard {
  int tp = 1;
  int tp_rank = 0;
  std::vector<int>
      layers;  // its layers in execution order (a pipeline stage, all its virtual chunks)
  bool embedding = true;  // first pipeline stage: token and position embeddings
  bool head = true;       // last pipeline stage: final norm and LM head
};

// Every layer, tp = 1: the single-rank model.
RankShard whole_model(const Model& m);

// What the rank at `c` holds under `l`: its tp part of its pipeline rank's chunks.
RankShard rank_shard(const Model& m, const Layout& l, const RankCoord& c);

// Half-open range of elements in a flat buffer.
struct ElementRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t count() const { return end - begin; }
};

struct ParamLayout {
  std::vector<ParamTensor> tensors;  // in buffer order
  int64_t total = 0;                 // elements in the flat buffer

  const ParamTensor& get(std::string_view name) const;  // asserts that it exists
  bool has(std::string_view name) const;
  int64_t count(ParamComponent c) const;
  ElementRange layer_range(int layer) const;  // a layer's tensors are contiguous
};

// Part i of n of a length split as evenly as possible (the first length % n parts one longer):
// how vocabulary rows, heads, MLP columns and ZeRO shards are divided.
ElementRange split_range(int64_t length, int parts, int index);

// The layout of `shard`'s parameters. Within a layer the order is ln1, wq wk wv, bq bk bv, wo, bo,
// ln2, [w_gate] w_fc1, [b_gate] b_fc1, w_fc2, b_fc2, so that a rank's q/k/v rows form one matrix
// [(heads + 2·kv_heads)·head_dim / tp, hidden] and its gate/up rows another (one GEMM each).
// With tied embeddings the LM head is the embedding; a last stage that is not also the first holds
// a copy "lm_head" initialised equal to wte (Megatron-LM; the caller all-reduces the two
// gradients). Throws InputError (file "model", the field) for models the executor does not run:
// mixture of experts, rotary position embeddings, or a tp that does not divide the heads.
ParamLayout param_layout(const Model& m, const RankShard& shard);

// Full-tensor element index (row-major over rows × cols) of element i of the rank's part of t.
int64_t full_index(const ParamTensor& t, int64_t i);

}  // namespace shardplan
