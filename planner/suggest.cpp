#include "planner/suggest.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "planner/report.h"

namespace shardplan {

namespace {

struct Change {
  std::string text;
  LayoutSpec fixed;
};

// A pin set to its least memory-hungry value, when it is not there already.
template <class T>
void lower_pin(std::vector<Change>& out, const LayoutSpec& fixed,
               std::optional<T> LayoutSpec::*field, const char* key, T value,
               std::string_view text) {
  if (!(fixed.*field) || *(fixed.*field) == value) return;
  Change c{fmt::format("{}={} instead of the pinned {}", key, text, key), fixed};
  c.fixed.*field = value;
  out.push_back(std::move(c));
}

template <class T>
void free_pin(std::vector<Change>& out, const LayoutSpec& fixed,
              std::optional<T> LayoutSpec::*field, const char* key) {
  if (!(fixed.*field)) return;
  Change c{fmt::format("{} left free instead of pinned", key), fixed};
  c.fixed.*field = std::nullopt;
  out.push_back(std::move(c));
}

std::vector<Change> pin_changes(const LayoutSpec& fixed) {
  std::vector<Change> out;
  lower_pin(out, fixed, &LayoutSpec::recompute, "recompute", Recompute::full, "full");
  lower_pin(out, fixed, &LayoutSpec::zero, "zero", 3, "3");
  lower_pin(out, fixed, &LayoutSpec::micro_batch, "mbs", 1, "1");
  free_pin(out, fixed, &LayoutSpec::tp, "tp");
  free_pin(out, fixed, &LayoutSpec::pp, "pp");
  free_pin(out, fixed, &LayoutSpec::cp, "cp");
  free_pin(out, fixed, &LayoutSpec::dp, "dp");
  free_pin(out, fixed, &LayoutSpec::ep, "ep");
  free_pin(out, fixed, &LayoutSpec::num_microbatches, "gas");
  free_pin(out, fixed, &LayoutSpec::sequence_parallel, "sp");
  free_pin(out, fixed, &LayoutSpec::vpp, "vpp");
  free_pin(out, fixed, &LayoutSpec::schedule, "schedule");
  if (out.size() > 1) out.push_back({"every pin left free (no --fix)", LayoutSpec{}});
  return out;
}

// The search with a change; nothing when no layout is valid or none fits.
std::optional<Suggestion> try_change(const std::string& text, const Model& model,
                                     const Cluster& cluster, const Training& training,
                                     const LayoutSpec& fixed, SearchOptions options) {
  options.top_k = 1;
  options.keep_refused = false;
  options.progress = false;
  try {
    SearchResult r = plan_search(model, cluster, training, fixed, options);
    if (r.top.empty()) return std::nullopt;
    return Suggestion{text, r.fitting, std::move(r.top.front())};
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// "286 rejected by layout.tp, e.g. 8 does not divide num_attention_heads=4": the three rules
// that rejected the most candidates.
std::string commonest_rules(const Enumerated& c) {
  struct RuleCount {
    int64_t n = 0;
    size_t order = 0;
    const Rejection* first = nullptr;
  };
  std::map<std::string, RuleCount> rules;
  for (const Rejection& x : c.rejections) {
    RuleCount& rc = rules[x.field];
    if (rc.n++ == 0) rc.order = rules.size(), rc.first = &x;
  }
  std::vector<const RuleCount*> sorted;
  for (const auto& [field, rc] : rules) sorted.push_back(&rc);
  std::sort(sorted.begin(), sorted.end(), [](const RuleCount* a, const RuleCount* b) {
    return a->n != b->n ? a->n > b->n : a->order < b->order;
  });
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(3, sorted.size()); ++i)
    out += fmt::format("; {} rejected by {}, e.g. {}", sorted[i]->n, sorted[i]->first->field,
                       sorted[i]->first->reason);
  return out;
}

}  // namespace

void require_valid(const SearchResult& r, const Model& model, const Cluster& cluster,
                   const Training& training, const LayoutSpec& fixed,
                   const SearchOptions& options) {
  if (r.enumerated.valid > 0) return;
  const Enumerated c =
      enumerate_layouts(model, cluster, training, fixed, options.runs_on, options.threads);
  std::string reason = fmt::format(
      "no valid layout of {} on {} devices (gbs {}, seq {}): {} shapes (tp, cp, pp, dp, "
      "ep) rejected whole, {} single layouts rejected{}",
      model.name, cluster.world(), training.global_batch, training.seq_len, c.shapes_invalid,
      c.layouts_invalid, commonest_rules(c));
  std::string hint =
      "a global batch with more divisors (--gbs), or fewer --fix pins; --explain lists every "
      "rejection";
  for (int nodes = cluster.nodes / 2; nodes >= 1; nodes /= 2) {
    const Cluster smaller = with_nodes(cluster, nodes, cluster.name);
    if (enumerate_layouts(model, smaller, training, fixed).valid == 0) continue;
    reason +=
        fmt::format("; with {} nodes ({} devices) there are valid layouts", nodes, smaller.world());
    hint = fmt::format("--nodes {}, or ", nodes) + hint;
    break;
  }
  throw InputError("", "layout", reason, hint);
}

std::vector<Suggestion> suggest_changes(const Model& model, const Cluster& cluster,
                                        const Training& training, const LayoutSpec& fixed,
                                        const SearchOptions& options, int max_node_factor) {
  std::vector<Suggestion> out;
  for (const Change& c : pin_changes(fixed))
    if (auto s = try_change(c.text, model, cluster, training, c.fixed, options))
      out.push_back(std::move(*s));
  // More nodes with the pins kept; with every pin left free when nothing else helped.
  for (const bool keep_pins : {true, false}) {
    if (!keep_pins && (!out.empty() || pin_changes(fixed).empty())) break;
    for (int factor = 2; factor <= max_node_factor; factor *= 2) {
      const int nodes = cluster.nodes * factor;
      const std::string text = fmt::format("--nodes {} ({}x the nodes){}", nodes, factor,
                                           keep_pins ? "" : " and no --fix");
      if (auto s = try_change(text, model, with_nodes(cluster, nodes, cluster.name), training,
                              keep_pins ? fixed : LayoutSpec{}, options)) {
        out.push_back(std::move(*s));
        return out;
      }
    }
  }
  return out;
}

}  // namespace shardplan
