#include "validate/set_score.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <map>

#include "core/enum_names.h"
#include "core/placement.h"

namespace shardplan {

namespace {

// Where a row's pipeline messages go: none (pp = 1), only within nodes, or between nodes for some
// pair of neighbouring stages (their first ranks' nodes, the rank order placing them).
std::string pipeline_span(const FidelityRow& row) {
  const Layout& l = row.layout;
  if (l.pp == 1) return "none";
  const int64_t per_node = row.cluster.devices_per_node;
  for (RankCoord a, b; b.pp + 1 < l.pp; a.pp = b.pp) {
    ++b.pp;
    if (rank_of(l, a) / per_node != rank_of(l, b) / per_node) return "across nodes";
  }
  return "within a node";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> row_slices(const FidelityRow& row) {
  const Layout& l = row.layout;
  const int m = l.num_microbatches;
  return {
      {"gpu", row.cluster.device.name},
      {"precision", row.training.fp8 == Fp8Recipe::none
                        ? std::string(enum_name(row.training.dtype, kDtypeNames))
                        : "fp8 " + std::string(enum_name(row.training.fp8, kFp8RecipeNames))},
      {"tp",
       l.tp == 1 ? "1" : (l.tp <= row.cluster.devices_per_node ? "within a node" : "across nodes")},
      {"pp depth", l.pp == 1 ? "1" : (l.pp <= 4 ? "2-4" : ">4")},
      {"pipeline messages", pipeline_span(row)},
      {"micro-batches per step", m == 1    ? "1"
                                 : m <= 4  ? "2-4"
                                 : m <= 16 ? "5-16"
                                           : ">16"},
      {"nodes", std::to_string(row.cluster.nodes)},
      {"model", row.model.is_moe() ? "MoE" : "dense"},
  };
}

namespace {

std::vector<RefusalCount> tally_refusals(const std::vector<PricedRow>& priced) {
  std::vector<RefusalCount> tally;
  for (const auto& p : priced) {
    if (p.refusal.empty()) continue;
    auto it = std::ranges::find(tally, p.refusal, &RefusalCount::reason);
    if (it == tally.end()) it = tally.insert(tally.end(), {p.refusal, 0, p.refusal_detail});
    ++it->count;
  }
  std::ranges::stable_sort(tally, [](const auto& a, const auto& b) { return a.count > b.count; });
  return tally;
}

}  // namespace

double time_error(const FidelityRow& row, const PricedRow& p) {
  return p.step_time_s / *row.measured_step_time_s - 1;
}

double predicted_memory_bytes(const FidelitySet& s, const PricedRow& p) {
  const int64_t reserved =
      s.memory_reading == MemoryReading::nvidia_smi ? p.runtime_reserved_bytes : 0;
  return static_cast<double>(
      (s.memory_on_first_stage ? p.first_stage_reserved_bytes : p.reserved_bytes) + reserved);
}

namespace {

PlannerScores planner_scores(const FidelitySet& s, const std::vector<PricedRow>& priced) {
  std::map<std::string, std::vector<GroupMember>> groups;
  // A row in a pathological slice measured a degraded run, not what its layout costs: no pick is
  // charged with it, and no ranking is asked to place it.
  for (size_t i = 0; i < s.rows.size(); ++i)
    if (priced[i].refusal.empty() && s.rows[i].measured_step_time_s &&
        s.rows[i].pathological.empty())
      groups[s.rows[i].group].push_back(
          {priced[i].step_time_s, *s.rows[i].measured_step_time_s, priced[i].fits});
  PlannerScores out;
  double regret = 0, rho = 0;
  for (const auto& [name, members] : groups) {
    if (members.size() >= 2)
      if (const auto r = pick_regret(members)) {
        regret += *r;
        ++out.regret_groups;
      }
    if (members.size() < 3) continue;
    std::vector<double> predicted, measured;
    for (const auto& m : members) {
      predicted.push_back(m.predicted_s);
      measured.push_back(m.measured_s);
    }
    if (const auto r = spearman(predicted, measured)) {
      rho += *r;
      ++out.spearman_groups;
    }
  }
  if (out.regret_groups > 0) out.mean_regret_pct = 100 * regret / out.regret_groups;
  if (out.spearman_groups > 0) out.mean_spearman = rho / out.spearman_groups;
  return out;
}

// Labels in first-seen order within each dimension, dimensions in row_slices' order.
std::vector<SliceScore> slice_scores(const std::vector<std::pair<std::string, std::string>>& keys,
                                     const std::vector<double>& errors) {
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<double>>> slices;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = std::ranges::find_if(slices, [&](const auto& s) { return s.first == keys[i]; });
    if (it == slices.end()) it = slices.insert(slices.end(), {keys[i], {}});
    it->second.push_back(errors[i]);
  }
  // By dimension; within one, numeric labels (nodes) in numeric order, others as first seen.
  std::ranges::stable_sort(slices, [](const auto& a, const auto& b) {
    if (a.first.first != b.first.first) return a.first.first < b.first.first;
    const auto number = [](const std::string& s) { return std::strtol(s.c_str(), nullptr, 10); };
    return number(a.first.second) > 0 && number(b.first.second) > 0 &&
           number(a.first.second) < number(b.first.second);
  });
  std::vector<SliceScore> out;
  for (const auto& [key, e] : slices) out.push_back({key.first, key.second, error_stats(e)});
  return out;
}

}  // namespace

SetScores score_set(const FidelitySet& s, const std::vector<PricedRow>& priced) {
  assert(priced.size() == s.rows.size());
  SetScores out;
  out.name = s.name;
  out.framework = s.framework;
  out.figure_field = s.figure_field;
  out.memory_reading = s.memory_reading;
  out.rows = static_cast<int>(s.rows.size());
  out.refusals = tally_refusals(priced);
  std::vector<double> all, clean, memory;
  std::vector<std::pair<std::string, std::string>> slice_keys, pathology_keys;
  std::vector<double> slice_errors, pathology_errors;
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const FidelityRow& row = s.rows[i];
    const PricedRow& p = priced[i];
    if (!p.refusal.empty()) {
      ++out.refused;
      continue;
    }
    ++out.priced;
    out.fits.add(p.fits, row.ran);
    if (row.measured_memory_bytes)
      memory.push_back(predicted_memory_bytes(s, p) / *row.measured_memory_bytes - 1);
    if (!row.measured_step_time_s) continue;
    const double e = time_error(row, p);
    all.push_back(e);
    if (row.pathological.empty()) clean.push_back(e);
    for (const auto& name : row.pathological) {
      pathology_keys.push_back({"pathological", name});
      pathology_errors.push_back(e);
    }
    for (auto& key : row_slices(row)) {
      slice_keys.push_back(std::move(key));
      slice_errors.push_back(e);
    }
  }
  out.step_time = error_stats(all);
  out.step_time_without_pathological = error_stats(clean);
  out.pathological = slice_scores(pathology_keys, pathology_errors);
  if (!memory.empty()) out.memory = error_stats(memory);
  out.planner = planner_scores(s, priced);
  out.slices = slice_scores(slice_keys, slice_errors);
  return out;
}

}  // namespace shardplan
