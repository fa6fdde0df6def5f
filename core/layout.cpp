#include "core/layout.h"

#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "core/json_enum.h"
#include "core/json_reader.h"

namespace shardplan {

namespace {
auto fields(const Layout& l) {
  return std::tie(l.dp, l.tp, l.pp, l.cp, l.ep, l.zero, l.micro_batch, l.num_microbatches,
                  l.recompute, l.sequence_parallel, l.vpp, l.schedule, l.rank_order);
}

template <class T>
void take(std::optional<T>& base, const std::optional<T>& over) {
  if (over) base = over;
}

// JSON integers are int64; the layout's counts are int.
int fit_int(const ObjectReader& r, std::string_view key, int64_t v) {
  if (v > std::numeric_limits<int>::max() || v < std::numeric_limits<int>::min())
    r.fail(key, fmt::format("{} is out of range", v));
  return static_cast<int>(v);
}
}  // namespace

bool operator==(const Layout& a, const Layout& b) {
  return fields(a) == fields(b);
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
  take(base.dtype, over.dtype);
  return base;
}

Schedule default_schedule(int vpp) {
  return vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
}

std::string to_string(const Layout& l) {
  return fmt::format(
      "tp={},pp={},dp={},cp={},ep={},zero={},mbs={},gbs={},sp={},vpp={},recompute={},schedule={},"
      "order={}",
      l.tp, l.pp, l.dp, l.cp, l.ep, l.zero, l.micro_batch, l.global_batch(),
      l.sequence_parallel ? 1 : 0, l.vpp, enum_name(l.recompute, kRecomputeNames),
      enum_name(l.schedule, kScheduleNames), l.rank_order);
}

nlohmann::json layout_to_json(const Layout& l) {
  return {{"dp", l.dp},
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
}

// The resolved layout: dp, tp, pp, micro_batch and num_microbatches are required, the rest take
// the defaults resolve_layout gives. Semantic checks are validate_layout's (it needs the model).
Layout layout_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file, "layout");
  Layout l;
  l.dp = fit_int(r, "dp", r.positive_integer("dp"));
  l.tp = fit_int(r, "tp", r.positive_integer("tp"));
  l.pp = fit_int(r, "pp", r.positive_integer("pp"));
  l.cp = fit_int(r, "cp", r.positive_integer_or("cp", 1));
  l.ep = fit_int(r, "ep", r.positive_integer_or("ep", 1));
  l.zero = fit_int(r, "zero", r.integer_or("zero", 0));
  l.micro_batch = fit_int(r, "micro_batch", r.positive_integer("micro_batch"));
  l.num_microbatches = fit_int(r, "num_microbatches", r.positive_integer("num_microbatches"));
  l.recompute = read_enum_or(r, "recompute", Recompute::none, kRecomputeNames);
  l.sequence_parallel = r.boolean_or("sequence_parallel", false);
  l.vpp = fit_int(r, "vpp", r.positive_integer_or("vpp", 1));
  l.schedule = read_enum_or(r, "schedule", default_schedule(l.vpp), kScheduleNames);
  l.rank_order = r.string_or("rank_order", std::string(kDefaultRankOrder));
  r.reject_unknown();
  return l;
}

}  // namespace shardplan
