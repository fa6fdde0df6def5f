#include "validate/set_reader.h"

#include <fmt/format.h>

#include <limits>

#include "core/error.h"
#include "core/presets.h"

namespace shardplan {

FidelitySet open_set(const nlohmann::json& j, const std::string& file, MeasuredFigure figure,
                     std::string figure_field, MemoryReading memory_reading) {
  if (!j.is_object()) throw InputError(file, "", "expected a JSON object at the top level");
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string())
    throw InputError(file, "name", "missing, or not a string: every set names itself");
  FidelitySet s;
  s.name = name->get<std::string>();
  s.file = file;
  s.figure = figure;
  s.figure_field = std::move(figure_field);
  s.memory_reading = memory_reading;
  return s;
}

std::vector<nlohmann::json> row_objects(const nlohmann::json& j, const std::string& file) {
  const auto rows = j.find("rows");
  if (rows == j.end() || !rows->is_array())
    throw InputError(file, "rows", "missing, or not an array");
  const auto columns = j.find("columns");
  std::vector<nlohmann::json> out;
  out.reserve(rows->size());
  for (size_t i = 0; i < rows->size(); ++i) {
    const nlohmann::json& row = (*rows)[i];
    if (row.is_object()) {
      out.push_back(row);
      continue;
    }
    if (!row.is_array() || columns == j.end() || !columns->is_array() ||
        row.size() != columns->size())
      throw InputError(file, row_id(i),
                       "expected an object, or an array with one item per `columns` entry");
    nlohmann::json object = nlohmann::json::object();
    for (size_t c = 0; c < row.size(); ++c) object[(*columns)[c].get<std::string>()] = row[c];
    out.push_back(std::move(object));
  }
  return out;
}

std::optional<double> optional_number(ObjectReader& r, std::string_view key) {
  if (!r.has(key) || r.raw(key).is_null()) return r.ignore({key}), std::nullopt;
  return r.number(key);
}

std::optional<int> optional_int(ObjectReader& r, std::string_view key) {
  if (!r.has(key) || r.raw(key).is_null()) return r.ignore({key}), std::nullopt;
  return int_field(r, key);
}

int64_t megatron_padded_vocab(int64_t vocab, int tp) {
  const int64_t multiple = int64_t{128} * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

namespace {

Model model_from_dims(const ModelDims& d) {
  Model m;
  m.name = d.name;
  m.num_layers = d.num_layers;
  m.hidden = d.hidden;
  m.num_heads = d.num_heads;
  m.num_kv_heads = d.num_kv_heads > 0 ? d.num_kv_heads : d.num_heads;
  m.head_dim = d.num_heads > 0 ? d.hidden / d.num_heads : 0;
  m.ffn_hidden = d.ffn_hidden > 0 ? d.ffn_hidden : 4 * d.hidden;
  m.vocab = d.vocab;
  m.max_seq = d.max_seq;
  m.tied_embeddings = d.tied_embeddings;
  return m;
}

}  // namespace

Model gpt_model(const ModelDims& d) {
  Model m = model_from_dims(d);
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.position_embedding = PositionEmbedding::learned;
  m.qkv_bias = m.out_bias = m.mlp_bias = true;
  return m;
}

Model llama_model(const ModelDims& d) {
  Model m = model_from_dims(d);
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position_embedding = PositionEmbedding::rope;
  return m;
}

const Cluster& ClusterCache::get(const std::string& name_or_path, int nodes) {
  const std::string key = fmt::format("{}@{}", name_or_path, nodes);
  auto it = loaded_.find(key);
  if (it == loaded_.end()) it = loaded_.emplace(key, load_cluster(name_or_path, nodes)).first;
  return it->second;
}

Cluster part_of_node(Cluster c, int devices, const std::string& file) {
  c.devices_per_node = devices;
  return with_nodes(std::move(c), 1, file);
}

Layout row_layout(const RowDegrees& d) {
  Layout l;
  l.dp = d.dp;
  l.tp = d.tp;
  l.pp = d.pp;
  l.zero = d.zero;
  l.micro_batch = d.micro_batch;
  l.num_microbatches = d.num_microbatches;
  l.recompute = d.recompute;
  l.sequence_parallel = d.sequence_parallel;
  l.schedule = Schedule::one_f_one_b;
  return l;
}

std::string row_id(size_t index) {
  return fmt::format("rows[{}]", index);
}

}  // namespace shardplan
