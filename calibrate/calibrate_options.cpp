#include "calibrate/calibrate_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "executor/state/param_layout.h"

namespace shardplan {

Profile rank_zero_profile(const Profile& p, MPI_Comm world) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  std::string text = rank == 0 ? profile_to_json(p).dump() : std::string();
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, world);
  text.resize(static_cast<size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, 0, world);
  return profile_from_json(nlohmann::json::parse(text), "calibration");
}

std::vector<LayerShare> layer_shares(const CalibrateOptions& o) {
  std::vector<LayerShare> shares;
  for (const Model& m : o.models)
    for (int tp : o.tp)
      for (int64_t mbs : o.micro_batches) {
        const RankShard shard{tp, 0, {}, true, true};
        const int64_t seq = o.seq > 0 ? o.seq : m.max_seq;
        shares.push_back({m, tp, layer_dims(m, shard, mbs, seq, false),
                          split_range(m.vocab, tp, 0).count(),
                          fmt::format("{} tp={} mbs={}", m.name, tp, mbs)});
      }
  return shares;
}

std::vector<GemmCall> model_gemm_calls(const std::vector<LayerShare>& shares,
                                       const HeadsPerCall& heads_per_call) {
  std::vector<GemmCall> calls;
  for (const LayerShare& s : shares)
    add_distinct(calls, layer_gemm_calls(s.dims, s.vocab_rows, s.label, heads_per_call));
  return calls;
}

void validate_calibrate_options(const CalibrateOptions& o, int world) {
  for (const Model& m : o.models)
    for (int tp : o.tp)
      if (tp < 1 || m.num_heads % tp != 0 || m.num_kv_heads % tp != 0)
        throw InputError(
            "--tp", "",
            fmt::format("{} does not divide {}'s num_attention_heads={} and num_key_value_heads={}",
                        tp, m.name, m.num_heads, m.num_kv_heads));
  for (int n : calibration_group_sizes(world))
    for (const CollectiveBench* b : collective_benches())
      if (sweep_counts(*b, o.sweep, n).size() < 2)
        throw InputError(
            "--max-bytes", "",
            fmt::format("{} B leaves {} on {} ranks fewer than two sizes to fit alpha and beta",
                        o.sweep.max_bytes, enum_name(b->collective, kCollectiveNames), n),
            "leave --max-bytes out: it follows the models' gradient size");
}

int64_t sweep_max_bytes(const std::vector<Model>& models) {
  int64_t bytes = int64_t{4} << 20;
  for (const Model& m : models)
    bytes = std::max(bytes, count_parameters(m).total() * dtype_bytes(Dtype::fp32));
  return bytes;
}

}  // namespace shardplan
