// What the five set readers share: a set file's rows as objects (either objects or `columns` +
// arrays), typed fields that may be null, the model families the sets train (Megatron GPT and
// Llama), the clusters they ran on, and a layout from a row's degrees. Errors name the file and
// the row's field (exit 1); a row that cannot be priced is refused with a reason, not thrown.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "validate/fidelity_set.h"

namespace shardplan {

// The set's header (its name) and the figures it publishes; rows and framework left empty
// (read_set fills the framework from validate/sets.cpp).
FidelitySet open_set(const nlohmann::json& j, const std::string& file, MeasuredFigure figure,
                     std::string figure_field, MemoryReading memory_reading);

// The rows of a set file as objects: `rows` as objects, or `columns` naming each array's items.
// The returned objects must outlive the readers made on them (row_readers).
std::vector<nlohmann::json> row_objects(const nlohmann::json& j, const std::string& file);

// A number that may be null (a crashed run's figures): none for null or absent.
std::optional<double> optional_number(ObjectReader& r, std::string_view key);
std::optional<int> optional_int(ObjectReader& r, std::string_view key);

// Megatron-LM pads the vocabulary to a multiple of make_vocab_size_divisible_by (128) × tp
// (megatron/training/tokenizer/tokenizer.py _vocab_size_with_padding), so the embedding shards
// evenly over the tensor-parallel ranks.
int64_t megatron_padded_vocab(int64_t vocab, int tp);

// The dimensions every set gives (Hugging Face names in comments).
struct ModelDims {
  std::string name;
  int num_layers = 0;      // num_hidden_layers
  int64_t hidden = 0;      // hidden_size
  int num_heads = 0;       // num_attention_heads
  int num_kv_heads = 0;    // num_key_value_heads (0: as many as heads)
  int64_t ffn_hidden = 0;  // intermediate_size (0: 4 × hidden)
  int64_t vocab = 0;
  int64_t max_seq = 0;
  bool tied_embeddings = true;
};

// GPT-2/3 as Megatron-LM and MPT build it (models/gpt3-175b.json): LayerNorm, GeLU MLP, biases on
// every linear, learned absolute positions, tied embeddings.
Model gpt_model(const ModelDims& d);
// Llama as nanotron and Megatron-Core build it (models/llama3-8b.json): RMSNorm, SwiGLU, RoPE,
// no biases.
Model llama_model(const ModelDims& d);

// A cluster preset (topologies/NAME.json) or a path, with `nodes` nodes; each distinct one read
// once per reader.
class ClusterCache {
 public:
  const Cluster& get(const std::string& name_or_path, int nodes);

 private:
  std::map<std::string, Cluster> loaded_;  // node-based: references stay valid
};

// `devices` GPUs of one node (2 or 4 of a DGX's 8): the node description with fewer devices,
// the NVLink domain larger than the cluster (validate_cluster accepts a domain holding all of it).
Cluster part_of_node(Cluster c, int devices, const std::string& file);

// A layout from a row's degrees (no cp, ep or interleaving), not yet validated: the pricing
// validates it against the row's model, cluster and training and refuses what fails.
struct RowDegrees {
  int dp = 1, tp = 1, pp = 1, zero = 0, micro_batch = 1, num_microbatches = 1;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
};
Layout row_layout(const RowDegrees& d);

// "rows[17]": how messages name a row.
std::string row_id(size_t index);

// Appends to `s` one row per row of the set file, each read by `read_row(ObjectReader&)` from a
// reader that names it in errors, and given its id.
template <class ReadRow>
void read_rows(FidelitySet& s, const nlohmann::json& j, const std::string& file,
               ReadRow&& read_row) {
  const std::vector<nlohmann::json> rows = row_objects(j, file);
  for (size_t i = 0; i < rows.size(); ++i) {
    ObjectReader r(rows[i], file, row_id(i));
    s.rows.push_back(read_row(r));
    s.rows.back().id = row_id(i);
  }
}

}  // namespace shardplan
