#include "core/layout.h"

#include <fmt/format.h>

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/json_reader.h"
#include "core/stage_split.h"

namespace shardplan {

namespace {
auto fields(const Layout& l) {
  return std::tie(l.dp, l.tp, l.pp, l.cp, l.ep, l.zero, l.micro_batch, l.num_microbatches,
                  l.recompute, l.sequence_parallel, l.vpp, l.schedule, l.rank_order, l.stages);
}

template <class T>
void take(std::optional<T>& base, const std::optional<T>& over) {
  if (over) base = over;
}

// A list of layer counts; its sum and length are check_split's, which needs the model.
std::vector<int> stages_field(ObjectReader& r) {
  const nlohmann::json& v = r.raw("stages");
  if (!v.is_array() || v.empty()) r.fail("stages", "expected a non-empty array of layer counts");
  std::vector<int> stages;
  for (const nlohmann::json& n : v) {
    if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 1'000'000)
      r.fail("stages", "expected non-negative integer layer counts, found " + n.dump());
    stages.push_back(n.get<int>());
  }
  return stages;
}

}  // namespace

bool operator==(const Layout& a, const Layout& b) {
  return fields(a) == fields(b);
}

size_t hash_value(const Layout& l) {
  size_t h = 0;
  const auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  std::apply(
      [&](const auto&... field) {
        const auto one = [&](const auto& f) {
          using F = std::decay_t<decltype(f)>;
          if constexpr (std::is_same_v<F, std::string>) {
            mix(std::hash<std::string>{}(f));
          } else if constexpr (std::is_same_v<F, std::vector<int>>) {
            for (int v : f) mix(std::hash<int>{}(v));
            mix(f.size());
          } else {
            mix(std::hash<int64_t>{}(static_cast<int64_t>(f)));
          }
        };
        (one(field), ...);
      },
      fields(l));
  return h;
}

LayoutSpec merge(LayoutSpec base, const LayoutSpec& over) {
  take(base.dp, over.dp);
  take(base.tp, over.tp);
  take(base.pp, over.pp);
  take(base.cp, over.cp);
  take(base.ep, over.ep);
  take(base.zero, over.zero);
  take(base.micro_batch, over.micro_batch);
  take(base.num_microbatches, over.num_microbatches);
  take(base.vpp, over.vpp);
  take(base.global_batch, over.global_batch);
  take(base.recompute, over.recompute);
  take(base.sequence_parallel, over.sequence_parallel);
  take(base.schedule, over.schedule);
  take(base.rank_order, over.rank_order);
  take(base.stages, over.stages);
  take(base.dtype, over.dtype);
  take(base.fp8, over.fp8);
  return base;
}

std::string to_string(const Layout& l) {
  const std::string stages = l.stages.empty() ? "" : ",stages=" + split_string(l.stages);
  return fmt::format(
      "tp={},pp={},dp={},cp={},ep={},zero={},mbs={},gbs={},sp={},vpp={},recompute={},schedule={},"
      "order={}{}",
      l.tp, l.pp, l.dp, l.cp, l.ep, l.zero, l.micro_batch, l.global_batch(),
      l.sequence_parallel ? 1 : 0, l.vpp, enum_name(l.recompute, kRecomputeNames),
      enum_name(l.schedule, kScheduleNames), l.rank_order, stages);
}

nlohmann::json layout_to_json(const Layout& l) {
  nlohmann::json j = {{"dp", l.dp},
                      {"tp", l.tp},
                      {"pp", l.pp},
                      {"cp", l.cp},
                      {"ep", l.ep},
                      {"zero", l.zero},
                      {"micro_batch", l.micro_batch},
                      {"num_microbatches", l.num_microbatches},
                      {"recompute", enum_name(l.recompute, kRecomputeNames)},
                      {"sequence_parallel", l.sequence_parallel},
                      {"vpp", l.vpp},
                      {"schedule", enum_name(l.schedule, kScheduleNames)},
                      {"rank_order", l.rank_order}};
  if (!l.stages.empty()) j["stages"] = l.stages;
  return j;
}

// The resolved layout, every key required (plan files are written by layout_to_json). Ranges and
// the rules between fields are validate_layout's, which needs the model, cluster and training.
Layout layout_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file, "layout");
  Layout l;
  l.dp = int_field(r, "dp");
  l.tp = int_field(r, "tp");
  l.pp = int_field(r, "pp");
  l.cp = int_field(r, "cp");
  l.ep = int_field(r, "ep");
  l.zero = int_field(r, "zero");
  l.micro_batch = int_field(r, "micro_batch");
  l.num_microbatches = int_field(r, "num_microbatches");
  l.recompute = enum_field(r, "recompute", kRecomputeNames);
  l.sequence_parallel = r.boolean("sequence_parallel");
  l.vpp = int_field(r, "vpp");
  l.schedule = enum_field(r, "schedule", kScheduleNames);
  l.rank_order = r.string("rank_order");
  if (r.has("stages")) l.stages = stages_field(r);
  r.ignore({"stages"});
  r.reject_unknown();
  return l;
}

}  // namespace shardplan
