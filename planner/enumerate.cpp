#include "planner/enumerate.h"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>

#include "core/error.h"
#include "core/stage_split.h"
#include "core/threads.h"

namespace shardplan {

std::vector<int> divisors(int64_t n) {
  assert(n > 0);
  std::vector<int> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(static_cast<int>(d));
    if (d * d != n) large.push_back(static_cast<int>(n / d));
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

namespace {

template <class T>
std::vector<T> choices(const std::optional<T>& fixed, std::vector<T> natural) {
  if (fixed) return {*fixed};
  return natural;
}

// Divisors of world / used; {1} when `used` (a fixed value) does not divide the world, so that
// validate_layout names the rule.
std::vector<int> divisors_of_rest(int64_t world, int64_t used) {
  return world % used == 0 ? divisors(world / used) : std::vector<int>{1};
}

class Enumerator {
 public:
  Enumerator(const Model& model, const Cluster& cluster, const Training& training,
             const LayoutSpec& fixed, std::optional<ExportFormat> runs_on)
      : model_(model), cluster_(cluster), training_(training), fixed_(fixed), runs_on_(runs_on) {}

  Candidates run(int threads) {
    const std::vector<Layout> shapes = all_shapes();
    std::vector<Candidates> parts(shapes.size());
    parallel_for(shapes.size(), static_cast<size_t>(std::max(threads, 1)),
                 [&](size_t i) { parts[i] = of_shape(shapes[i]); });
    join(parts);
    return std::move(out_);
  }

  // One shape's candidates; with `visit`, handed to it instead of kept.
  Candidates of_shape(const Layout& s, bool keep_rejections = true,
                      const std::function<void(const Layout&)>* visit = nullptr) const {
    Enumerator e(model_, cluster_, training_, fixed_, runs_on_);
    e.keep_rejections_ = keep_rejections;
    e.visit_ = visit;
    e.shape(s);
    return std::move(e.out_);
  }

  // The layouts run() would visit, valid or not, counted without validating any.
  int64_t count() {
    counting_ = true;
    for (const Layout& s : all_shapes()) shape(s);
    return counted_;
  }

  // Every (tp, cp, pp, dp, ep) the fixed fields leave, or the one they name when none is left.
  std::vector<Layout> all_shapes() const {
    const int64_t world = cluster_.world();
    std::vector<Layout> shapes;
    for (int tp : choices(fixed_.tp, divisors(world)))
      for (int cp : choices(fixed_.cp, divisors_of_rest(world, tp)))
        for (int pp : pp_choices(world, tp, cp)) {
          const int64_t used = int64_t{tp} * cp * pp;
          const int dp = fixed_.dp.value_or(world % used == 0 ? static_cast<int>(world / used) : 1);
          for (int ep : choices(fixed_.ep, model_.is_moe() ? divisors(dp) : std::vector<int>{1}))
            shapes.push_back(Layout{.dp = dp, .tp = tp, .pp = pp, .cp = cp, .ep = ep});
        }
    if (shapes.empty()) shapes.push_back(simplest_fixed(world));
    return shapes;
  }

 private:
  // The shapes' candidates one after another, in enumeration order.
  void join(std::vector<Candidates>& parts) {
    size_t layouts = 0;
    for (const Candidates& p : parts) layouts += p.layouts.size();
    out_.layouts.reserve(layouts);
    for (Candidates& p : parts) {
      std::move(p.layouts.begin(), p.layouts.end(), std::back_inserter(out_.layouts));
      out_.add(std::move(p));
    }
  }

  // With dp fixed and pp free, pp is what is left of the world (nothing when it does not divide).
  std::vector<int> pp_choices(int64_t world, int tp, int cp) const {
    if (fixed_.pp || !fixed_.dp)
      return choices(fixed_.pp, divisors_of_rest(world, int64_t{tp} * cp));
    const int64_t used = int64_t{tp} * cp * *fixed_.dp;
    if (world % used != 0) return {};
    return {static_cast<int>(world / used)};
  }

  // When no shape matches the fixed fields, the one they name, so its rule is reported.
  Layout simplest_fixed(int64_t world) const {
    Layout l{.tp = fixed_.tp.value_or(1),
             .pp = fixed_.pp.value_or(1),
             .cp = fixed_.cp.value_or(1),
             .ep = fixed_.ep.value_or(1)};
    l.dp = fixed_.dp.value_or(static_cast<int>(world / (int64_t{l.tp} * l.pp * l.cp)));
    return l;
  }

  std::optional<InputError> broken_rule(const Layout& l) const {
    return broken_layout_rule(l, model_, cluster_, training_, "plan");
  }

  std::optional<InputError> unsupported(const Layout& l) const {
    if (!runs_on_) return std::nullopt;
    if (auto reason = unsupported_by(*runs_on_, l)) return InputError("", "--export", *reason);
    return std::nullopt;
  }

  void reject(const Layout& l, const InputError& e, bool whole_shape) {
    if (keep_rejections_) out_.rejections.push_back({l, whole_shape, e.field, e.reason});
  }

  int64_t local_batch(const Layout& l) const { return training_.global_batch / l.dp; }

  // Micro-batch sizes: the fixed one, the one a fixed number of micro-batches implies, or every
  // divisor of the sequences each data-parallel rank takes per step.
  std::vector<int> micro_batches(const Layout& l) const {
    if (fixed_.micro_batch) return {*fixed_.micro_batch};
    if (fixed_.num_microbatches)
      return {static_cast<int>(std::max<int64_t>(1, local_batch(l) / *fixed_.num_microbatches))};
    return divisors(std::max<int64_t>(1, local_batch(l)));
  }

  void set_micro_batch(Layout& l, int micro_batch) const {
    l.micro_batch = micro_batch;
    l.num_microbatches = fixed_.num_microbatches.value_or(
        static_cast<int>(std::max<int64_t>(1, local_batch(l) / micro_batch)));
  }

  // Up to the layers per stage, so that every virtual stage holds one (pp·vpp need not divide the
  // layers: core/stage_split.h).
  std::vector<int> virtual_stages(const Layout& l) const {
    if (fixed_.vpp) return {*fixed_.vpp};
    if (fixed_.schedule && v_placement(*fixed_.schedule)) return {2};
    if (training_.layer_split == LayerSplit::cost_balanced) return {1};  // it runs no interleaving
    if (l.pp == 1 || l.pp > model_.num_layers) return {1};
    // ZB-V's two chunks a rank whether the layers divide evenly over them or not.
    std::vector<int> vpps = divisors(model_.num_layers / l.pp);
    if (!fixed_.schedule && 2 * l.pp <= model_.num_layers &&
        std::ranges::find(vpps, 2) == vpps.end())
      vpps.insert(vpps.begin() + 1, 2);
    return vpps;
  }

  // The layers per virtual stage: the fixed split (in canonical form where it is whole, else as
  // given for validate_layout to name what is wrong), the framework's own where it splits them
  // itself, or candidate_splits' (the even one first when it divides). {{}} where none fits, so
  // that validate_layout names the rule. Each depends on pp · vpp alone (on pp where the framework
  // splits the layers, which runs no interleaving), and is found once for the inner loops.
  const std::vector<std::vector<int>>& splits(const Layout& l) {
    const int64_t chunks = int64_t{l.pp} * l.vpp;
    auto [it, fresh] = splits_.try_emplace(chunks);
    if (fresh) it->second = splits_of(l);
    return it->second;
  }

  std::vector<std::vector<int>> splits_of(const Layout& l) const {
    const int64_t chunks = int64_t{l.pp} * l.vpp;
    if (fixed_.stages) {
      const std::vector<int>& s = *fixed_.stages;
      const bool whole = std::ssize(s) == chunks &&
                         std::accumulate(s.begin(), s.end(), int64_t{0}) == model_.num_layers;
      return {whole ? canonical_split(s) : s};
    }
    // A framework that splits the layers itself runs its own split whatever the depth: the only
    // one there is to price.
    if (training_.layer_split == LayerSplit::cost_balanced)
      return {split_as_run(Layout{.pp = l.pp}, model_, training_).stages};
    if (chunks == 1 || chunks > model_.num_layers) return {{}};
    return candidate_splits(model_, static_cast<int>(chunks));
  }

  std::vector<Schedule> schedules(const Layout& l) const {
    // A fixed 1f1b with virtual stages is the interleaved 1F1B, as resolve_layout reads it.
    if (fixed_.schedule)
      return {*fixed_.schedule == Schedule::one_f_one_b ? implied_schedule(l.vpp)
                                                        : *fixed_.schedule};
    // Interleaving where its chunks divide the layers (virtual_stages), ZB-V at vpp = 2 always.
    if (l.vpp == 2)
      return (model_.num_layers / l.pp) % 2 == 0
                 ? std::vector{Schedule::interleaved, Schedule::zb_v}
                 : std::vector{Schedule::zb_v};
    if (l.vpp > 1) return {Schedule::interleaved};
    if (l.pp == 1) return {Schedule::one_f_one_b};
    return {Schedule::one_f_one_b, Schedule::gpipe, Schedule::zb_h1, Schedule::zb_h2};
  }

  // The shape's least demanding layout: ZeRO 0, the smallest micro-batch, no recompute, no sp,
  // one virtual stage unless an interleaved schedule is fixed.
  Layout simplest(Layout l) {
    l.zero = fixed_.zero.value_or(0);
    set_micro_batch(l, micro_batches(l).front());
    l.recompute = fixed_.recompute.value_or(Recompute::none);
    l.sequence_parallel = fixed_.sequence_parallel.value_or(false);
    const std::vector<int> vpps = virtual_stages(l);
    l.vpp = fixed_.schedule == Schedule::interleaved && vpps.size() > 1 ? vpps[1] : vpps.front();
    l.stages = splits(l).front();
    l.schedule = schedules(l).front();
    l.rank_order = fixed_.rank_order.value_or(std::string(kDefaultRankOrder));
    return l;
  }

  // Whether a rule the simplest layout breaks rejects the whole shape: one on the shape's own
  // fields (or the batch it must divide), not on a field the inner loops still vary.
  static bool on_shape(const InputError& e) {
    constexpr std::string_view kShapeFields[] = {
        "layout.tp", "layout.cp",           "layout.pp",        "layout.dp",
        "layout.ep", "layout.global_batch", "layout.rank_order"};
    return std::find(std::begin(kShapeFields), std::end(kShapeFields), e.field) !=
           std::end(kShapeFields);
  }

  void shape(const Layout& s) {
    ++out_.shapes;
    const Layout first = simplest(s);
    std::optional<InputError> e = counting_ ? std::nullopt : broken_rule(first);
    if (e && !on_shape(*e))
      e.reset();  // left to the inner loops, layout by layout
    else if (!e && !counting_)
      e = unsupported(first);
    if (e) {
      ++out_.shapes_invalid;
      reject(first, *e, true);
      return;
    }
    Layout l = first;
    for (int micro_batch : micro_batches(l)) {
      set_micro_batch(l, micro_batch);
      for (bool sp : choices(fixed_.sequence_parallel, l.tp > 1 ? std::vector<bool>{false, true}
                                                                : std::vector<bool>{false})) {
        l.sequence_parallel = sp;
        for (int vpp : virtual_stages(l)) {
          l.vpp = vpp;
          for (const std::vector<int>& split : splits(l)) {
            l.stages = split;
            for (Schedule schedule : schedules(l)) {
              l.schedule = schedule;
              stages_and_recomputes(l);
            }
          }
        }
      }
    }
  }

  // Every ZeRO stage and recompute of a layout. validate_layout's rules do not involve either
  // beyond the ranges they are drawn from, so it is asked once, of the first; a rule that breaks
  // rejects each of them. Whether the framework of --export runs them is asked of each. A split
  // backward runs with ZeRO-0/1 and without full recomputation (check_pipeline): those are its
  // candidates, and a fixed stage or mode outside them is asked of each.
  void stages_and_recomputes(Layout l) {
    const bool sharded = int64_t{l.dp} * l.cp > 1;
    std::vector<int> zeros =
        choices(fixed_.zero, sharded ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0});
    std::vector<Recompute> recomputes =
        choices(fixed_.recompute, {Recompute::none, Recompute::selective, Recompute::full});
    const bool split = splits_backward(l.schedule);
    if (split && !fixed_.zero) std::erase_if(zeros, [](int z) { return z > 1; });
    if (split && !fixed_.recompute) std::erase(recomputes, Recompute::full);
    if (counting_) {
      counted_ += std::ssize(zeros) * std::ssize(recomputes);
      return;
    }
    l.zero = zeros.front();
    l.recompute = recomputes.front();
    const std::optional<InputError> broken = split ? std::nullopt : broken_rule(l);
    for (int zero : zeros) {
      l.zero = zero;
      for (Recompute r : recomputes) {
        l.recompute = r;
        if (auto e = split ? broken_rule(l) : broken; e || (e = unsupported(l))) {
          ++out_.layouts_invalid;
          reject(l, *e, false);
        } else {
          ++out_.valid;
          if (visit_)
            (*visit_)(l);
          else
            out_.layouts.push_back(l);
        }
      }
    }
  }

  const Model& model_;
  const Cluster& cluster_;
  const Training& training_;
  const LayoutSpec& fixed_;
  std::optional<ExportFormat> runs_on_;
  Candidates out_;
  std::map<int64_t, std::vector<std::vector<int>>> splits_;  // by pp · vpp
  bool keep_rejections_ = true;
  const std::function<void(const Layout&)>* visit_ = nullptr;
  bool counting_ = false;  // count(): loops only
  int64_t counted_ = 0;
};

}  // namespace

void Enumerated::add(Enumerated&& part) {
  shapes += part.shapes;
  shapes_invalid += part.shapes_invalid;
  valid += part.valid;
  layouts_invalid += part.layouts_invalid;
  std::move(part.rejections.begin(), part.rejections.end(), std::back_inserter(rejections));
}

Candidates enumerate_layouts(const Model& model, const Cluster& cluster, const Training& training,
                             const LayoutSpec& fixed, std::optional<ExportFormat> runs_on,
                             int threads) {
  assert(!fixed.global_batch || *fixed.global_batch == training.global_batch);
  return Enumerator(model, cluster, training, fixed, runs_on).run(threads);
}

std::vector<Layout> enumeration_shapes(const Model& model, const Cluster& cluster,
                                       const Training& training, const LayoutSpec& fixed) {
  return Enumerator(model, cluster, training, fixed, std::nullopt).all_shapes();
}

Enumerated visit_shape(const Model& model, const Cluster& cluster, const Training& training,
                       const LayoutSpec& fixed, std::optional<ExportFormat> runs_on,
                       const Layout& shape, bool keep_rejections,
                       const std::function<void(const Layout&)>& visit) {
  assert(!fixed.global_batch || *fixed.global_batch == training.global_batch);
  return Enumerator(model, cluster, training, fixed, runs_on)
      .of_shape(shape, keep_rejections, &visit);
}

int64_t count_layouts(const Model& model, const Cluster& cluster, const Training& training,
                      const LayoutSpec& fixed) {
  return Enumerator(model, cluster, training, fixed, std::nullopt).count();
}

}  // namespace shardplan
