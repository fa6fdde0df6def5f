#include "planner/search.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <span>
#include <thread>

#include "core/error.h"
#include "core/threads.h"
#include "simulator/allocator_replay.h"

namespace shardplan {

double objective_value(Objective o, const Estimate& e, const Cluster& cluster,
                       const Training& training) {
  switch (o) {
    case Objective::time:
      return e.step_time_s;
    case Objective::tokens_per_s:
      return -e.tokens_per_s;
    case Objective::cost:  // device-seconds per token
      return e.step_time_s * static_cast<double>(cluster.world()) /
             static_cast<double>(training.tokens_per_step());
  }
  return e.step_time_s;
}

double objective_lower_bound(Objective o, double step_time_s, const Layout& l,
                             const Cluster& cluster, const Training& training) {
  switch (o) {
    case Objective::time:
      return step_time_s;
    case Objective::tokens_per_s:  // as estimate() counts a step's tokens
      return -static_cast<double>(l.global_batch() * training.seq_len) / step_time_s;
    case Objective::cost:
      return step_time_s * static_cast<double>(cluster.world()) /
             static_cast<double>(training.tokens_per_step());
  }
  return step_time_s;
}

namespace {

// The order of the ranking: objective, then less memory, then enumeration order. Total, so the
// merge of the threads' partial results is the same however the candidates were split.
struct Key {
  double objective = 0;
  int64_t peak_bytes = 0;
  int64_t index = 0;
  bool operator<(const Key& o) const {
    if (objective != o.objective) return objective < o.objective;
    if (peak_bytes != o.peak_bytes) return peak_bytes < o.peak_bytes;
    return index < o.index;
  }
};

// How far over its device a pruned layout is: (peak + reserve) / capacity, then enumeration order.
struct MissKey {
  double over = 0;
  int64_t index = 0;
  bool operator<(const MissKey& o) const {
    return over != o.over ? over < o.over : index < o.index;
  }
};

// Fields along which the explanation compares the winner with its neighbours.
struct Axis {
  std::string_view name;
  int (*value)(const Layout&);
};
constexpr Axis kAxes[] = {
    {"tp", [](const Layout& l) { return l.tp; }},
    {"pp", [](const Layout& l) { return l.pp; }},
    {"cp", [](const Layout& l) { return l.cp; }},
    {"dp", [](const Layout& l) { return l.dp; }},
    {"ep", [](const Layout& l) { return l.ep; }},
    {"zero", [](const Layout& l) { return l.zero; }},
    {"mbs", [](const Layout& l) { return l.micro_batch; }},
    {"recompute", [](const Layout& l) { return static_cast<int>(l.recompute); }},
    {"sp", [](const Layout& l) { return static_cast<int>(l.sequence_parallel); }},
    {"vpp", [](const Layout& l) { return l.vpp; }},
    {"schedule", [](const Layout& l) { return static_cast<int>(l.schedule); }},
};
constexpr size_t kAxisCount = std::size(kAxes);

// Keeps the n smallest keys, sorted.
template <class K>
void keep_smallest(std::vector<K>& kept, const K& k, size_t n) {
  if (kept.size() == n && !(k < kept.back())) return;
  kept.insert(std::upper_bound(kept.begin(), kept.end(), k), k);
  if (kept.size() > n) kept.pop_back();
}

// A key with its layout: the search keeps the layouts it may report, not every one it prices.
template <class K>
struct Kept {
  K key;
  Layout layout;
  bool operator<(const Kept& o) const { return key < o.key; }
};

// keep_smallest's, copying the layout only where the key is kept.
template <class K>
void keep_smallest(std::vector<Kept<K>>& kept, const K& k, const Layout& l, size_t n) {
  if (kept.size() == n && !(k < kept.back().key)) return;
  keep_smallest(kept, Kept<K>{k, l}, n);
}

// The better of `by_value[value]` and (k, l).
void keep_best(std::map<int, Kept<Key>>& by_value, int value, const Key& k, const Layout& l) {
  const auto it = by_value.find(value);
  if (it == by_value.end())
    by_value.emplace(value, Kept<Key>{k, l});
  else if (k < it->second.key)
    it->second = {k, l};
}

// The enumeration order of a shape's j-th layout: shape by shape, as enumerate_layouts lists them.
int64_t layout_index(size_t shape, size_t j) {
  return static_cast<int64_t>((uint64_t{shape} << 32) | j);
}

// The layouts that came closest to fitting, kept for "nothing fits".
constexpr size_t kClosestMisses = 8;

// What a layout's lower bound must beat for its exact key to matter: the k-th best objective and
// the best objective of each field's value among the layouts timed so far, by any thread (a
// thread's own, and the others' as of its last chunk). Each is the exact objective of a timed
// layout, so a layout bounded above all those of its values could displace none of them.
struct Bar {
  std::vector<std::pair<double, int64_t>> top;  // the k best (objective, index), ascending
  // Each axis's (value, best objective), unordered: a field takes a few dozen values at most, and
  // every layout priced looks up each of its own (bounded_out).
  std::array<std::vector<std::pair<int, double>>, kAxisCount> by_axis;

  const double* best(size_t axis, int value) const { return find(by_axis[axis], value); }

  // A timed layout among the k best, once however often the threads exchange it.
  void add_top(double objective, int64_t index, size_t k) {
    if (std::none_of(top.begin(), top.end(), [&](const auto& t) { return t.second == index; }))
      keep_smallest(top, {objective, index}, k);
  }
  void add_best(size_t axis, int value, double objective) {
    if (double* known = find(by_axis[axis], value))
      *known = std::min(*known, objective);
    else
      by_axis[axis].emplace_back(value, objective);
  }
  template <class Values>
  static auto find(Values& values, int value) -> decltype(&values.front().second) {
    for (auto& [v, objective] : values)
      if (v == value) return &objective;
    return nullptr;
  }

  void add(const Bar& other, size_t k) {
    for (const auto& [objective, index] : other.top) add_top(objective, index, k);
    for (size_t a = 0; a < kAxisCount; ++a)
      for (const auto& [value, objective] : other.by_axis[a]) add_best(a, value, objective);
  }
};

// What one thread found; merged in a fixed order afterwards.
struct Partial {
  int64_t pruned = 0;
  int64_t fitting = 0;
  int64_t bounded = 0;
  std::vector<Kept<Key>> top;
  std::array<std::map<int, Kept<Key>>, kAxisCount> best_by_axis;
  std::vector<Kept<MissKey>> closest;
  std::vector<Kept<MissKey>> all_misses;  // with keep_refused
  Bar bar;
};

double overflow_ratio(const RankMemory& r) {
  return static_cast<double>(r.reserved_bytes() + r.runtime_reserved_bytes) /
         static_cast<double>(r.capacity_bytes);
}

// What the search prunes on: the worst stage's tensors' peak with the runtime's memory (NCCL's
// buffers, cuBLAS's workspaces), as the estimate adds it; not yet the allocator's reserve (see
// kept_layouts).
RankMemory pruning_memory(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                          const ExecutionOptions& x) {
  RankMemory worst = worst_stage_memory(m, t, l, c.device, x).memory;
  add_runtime_memory(worst, c, l);
  return worst;
}

// The search keeps twice the top it reports: it ranks on the tensors' peak, and the allocator's
// reserve, replayed for the kept layouts alone, may push some at the edge of the device's memory
// over it.
size_t kept_layouts(const SearchOptions& o) {
  return 2 * static_cast<size_t>(o.top_k);
}

class Search {
 public:
  Search(const Model& m, const Cluster& c, const Training& t, const LayoutSpec& fixed,
         const SearchOptions& o)
      : m_(m),
        c_(c),
        t_(t),
        fixed_(fixed),
        o_(o),
        shapes_(enumeration_shapes(m, c, t, fixed)),
        enumerated_(shapes_.size()),
        kept_(kept_layouts(o)) {}

  // Enumerates and prices shapes taken from a shared counter until none is left, sharing its bar
  // every kChunk layouts priced.
  void work(Partial& p) {
    EstimateCache cache;  // this thread's: a shape's inner loops run in a row
    cache.replay_allocator = false;
    size_t unshared = 0;
    for (size_t s = next_++; s < shapes_.size(); s = next_++) {
      size_t j = 0;
      enumerated_[s] = visit_shape(m_, c_, t_, fixed_, o_.runs_on, shapes_[s], o_.keep_refused,
                                   [&](const Layout& l) {
                                     price(p, l, layout_index(s, j++), cache);
                                     if (o_.bound && ++unshared == kChunk) {
                                       unshared = 0;
                                       share(p.bar);
                                     }
                                   });
      ++shapes_done_;
    }
  }

  size_t shapes() const { return shapes_.size(); }
  size_t shapes_done() const { return shapes_done_.load(); }

  // Every shape's counts and rejections, in enumeration order, once the workers are done.
  Enumerated enumerated() {
    Enumerated all;
    for (Enumerated& e : enumerated_) all.add(std::move(e));
    return all;
  }

 private:
  void price(Partial& p, const Layout& l, int64_t index, EstimateCache& cache) {
    StageStateCache& states = cache.stage_states();
    // A stage whose tensors alone are over the device beside the least runtime memory any stage
    // holds rules the layout out; its overflow, at least theirs, is needed only if it could be
    // among the closest misses (every miss's with keep_refused).
    const int64_t capacity = c_.device.memory_bytes();
    const int64_t least_runtime = states.least_runtime_bytes(c_, l);
    WorstStageMemory worst = worst_stage_memory(
        m_, t_, l, c_.device, o_.execution, &states,
        o_.keep_refused ? std::nullopt : std::optional<int64_t>(capacity - least_runtime));
    if (!worst.complete) {
      const double over = static_cast<double>(worst.memory.peak_bytes() + least_runtime) /
                          static_cast<double>(capacity);
      if (p.closest.size() == kClosestMisses && over > p.closest.back().key.over) {
        ++p.pruned;
        return;
      }
      worst = worst_stage_memory(m_, t_, l, c_.device, o_.execution, &states);
    }
    add_runtime_memory(worst.memory, c_, l, &states);  // as pruning_memory adds it
    const RankMemory& mem = worst.memory;
    if (!mem.fits()) {
      ++p.pruned;
      const MissKey miss{overflow_ratio(mem), index};
      keep_smallest(p.closest, miss, l, kClosestMisses);
      if (o_.keep_refused) p.all_misses.push_back({miss, l});
      return;
    }
    ++p.fitting;
    if (o_.bound && bounded_out(p, l, cache)) {
      ++p.bounded;
      return;
    }
    const Estimate e = estimate(m_, c_, t_, l, o_.execution, &cache);
    const Key k{objective_value(o_.objective, e, c_, t_), e.memory().peak_bytes(), index};
    keep_smallest(p.top, k, l, kept_);
    p.bar.add_top(k.objective, index, kept_);
    for (size_t a = 0; a < kAxisCount; ++a) {
      keep_best(p.best_by_axis[a], kAxes[a].value(l), k, l);
      p.bar.add_best(a, kAxes[a].value(l), k.objective);
    }
  }

  // Whether the layout's objective, at its lower bound, is worse than the bar's k-th and than its
  // best of each of the layout's fields' values: then the layout could displace neither, and its
  // exact key is not needed.
  bool bounded_out(const Partial& p, const Layout& l, EstimateCache& cache) const {
    if (p.bar.top.size() < kept_) return false;
    double worst_kept = p.bar.top.back().first;
    for (size_t a = 0; a < kAxisCount; ++a) {
      const double* best = p.bar.best(a, kAxes[a].value(l));
      if (!best) return false;
      worst_kept = std::max(worst_kept, *best);
    }
    const auto beyond = [&](double step_s) {
      return objective_lower_bound(o_.objective, step_s, l, c_, t_) > worst_kept;
    };
    return beyond(step_time_lower_bound(m_, c_, t_, l, o_.execution, &cache, beyond));
  }

  // The thread's bar into the shared one, and the others' into the thread's.
  void share(Bar& bar) {
    const std::lock_guard lock(shared_mutex_);
    shared_.add(bar, kept_);
    bar.add(shared_, kept_);
  }

  static constexpr size_t kChunk = 256;
  const Model& m_;
  const Cluster& c_;
  const Training& t_;
  const LayoutSpec& fixed_;
  const SearchOptions& o_;
  const std::vector<Layout> shapes_;
  std::vector<Enumerated> enumerated_;  // by shape
  const size_t kept_;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> shapes_done_{0};
  std::mutex shared_mutex_;
  Bar shared_;
};

Partial merge(std::vector<Partial>& parts, size_t top_k) {
  Partial all;
  for (Partial& p : parts) {
    all.pruned += p.pruned;
    all.fitting += p.fitting;
    all.bounded += p.bounded;
    for (const Kept<Key>& k : p.top) keep_smallest(all.top, k, top_k);
    for (const Kept<MissKey>& k : p.closest) keep_smallest(all.closest, k, kClosestMisses);
    for (size_t a = 0; a < kAxisCount; ++a)
      for (const auto& [value, k] : p.best_by_axis[a])
        keep_best(all.best_by_axis[a], value, k.key, k.layout);
    std::move(p.all_misses.begin(), p.all_misses.end(), std::back_inserter(all.all_misses));
  }
  std::sort(all.all_misses.begin(), all.all_misses.end());
  return all;
}

// Runs `threads` workers; while they run, a progress line on stderr every 0.2 s when asked.
void run_workers(Search& search, std::vector<Partial>& parts, bool progress) {
  bool printed = false;
  run_threads(
      parts.size(), [&](size_t i) { search.work(parts[i]); },
      [&](const auto& running) {
        while (progress && running()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          fmt::print(stderr, "\rpricing layouts: shape {} of {}", search.shapes_done(),
                     search.shapes());
          printed = true;
        }
      });
  if (printed) fmt::print(stderr, "\r{:40}\r", "");
}

}  // namespace

SearchResult plan_search(const Model& model, const Cluster& cluster, const Training& training,
                         const LayoutSpec& fixed, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t visited = count_layouts(model, cluster, training, fixed);
  if (visited > options.max_layouts)
    throw InputError("--max-layouts", "",
                     fmt::format("the search spans {} layouts, more than the {} it may visit",
                                 visited, options.max_layouts),
                     "pin part of the layout with --fix (e.g. tp=8 or pp=4), or raise "
                     "--max-layouts");
  SearchResult r;
  Search search(model, cluster, training, fixed, options);
  const size_t threads = std::clamp<size_t>(static_cast<size_t>(options.threads), 1,
                                            std::max<int64_t>(1, visited / 1024));
  r.threads = static_cast<int>(threads);
  std::vector<Partial> parts(threads);
  run_workers(search, parts, options.progress);
  r.enumerated = search.enumerated();
  const Partial all = merge(parts, kept_layouts(options));

  r.pruned_for_memory = all.pruned;
  r.fitting = all.fitting;
  r.bounded = all.bounded;
  r.timed = all.fitting - all.bounded;
  // Each key's layout estimated in full, over the threads. The allocator replay's stages and
  // micro-batches take most of the time: the longest are handed out first, so that no thread is
  // left with one of them at the end.
  const auto ranked = [&](std::span<const Kept<Key>> keys) {
    std::vector<size_t> order(keys.size());
    std::iota(order.begin(), order.end(), size_t{0});
    const auto replay_size = [&](size_t i) {
      const Layout& l = keys[i].layout;
      return int64_t{l.pp} * replayed_microbatches(l);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return replay_size(a) > replay_size(b); });
    std::vector<Ranked> out(keys.size());
    parallel_for(keys.size(), threads, [&](size_t n) {
      const size_t i = order[n];
      const auto& [k, l] = keys[i];
      out[i] = {l, estimate(model, cluster, training, l, options.execution), k.objective, k.index};
    });
    return out;
  };
  // Kept on the tensors' peak; the full estimate adds the allocator's reserve (replayed for these
  // alone: about a millisecond a layout), over which a layout at the edge no longer fits. As many
  // as the top still lacks are estimated at a time.
  const size_t top_k = static_cast<size_t>(options.top_k);
  for (size_t next = 0; r.top.size() < top_k && next < all.top.size();) {
    const size_t n = std::min(top_k - r.top.size(), all.top.size() - next);
    for (Ranked& kept : ranked(std::span(all.top).subspan(next, n))) {
      if (kept.estimate.fits) {
        r.top.push_back(std::move(kept));
      } else {
        ++r.pruned_for_memory;
        --r.fitting;
        --r.timed;
      }
    }
    next += n;
  }
  if (!r.top.empty()) {
    const Layout& best = r.top.front().layout;
    std::vector<Alternative> candidates;
    std::vector<Kept<Key>> keys;
    for (size_t a = 0; a < kAxisCount; ++a) {
      const std::map<int, Kept<Key>>& by_value = all.best_by_axis[a];
      const auto own = by_value.find(kAxes[a].value(best));  // the winner fits, so it is there
      for (auto it = by_value.begin(); it != by_value.end(); ++it) {
        if (it == own) continue;
        const bool adjacent =
            std::next(it) == own || (own != by_value.begin() && std::prev(own) == it);
        candidates.push_back({kAxes[a].name, it->first, adjacent, {}});
        keys.push_back(it->second);
      }
    }
    // One layout is often the best of several fields' values, or in the top already: each is
    // estimated once.
    std::map<int64_t, const Ranked*> known;
    for (const Ranked& t : r.top) known.emplace(t.index, &t);
    std::vector<Kept<Key>> unknown;
    for (const Kept<Key>& k : keys)
      if (known.emplace(k.key.index, nullptr).second) unknown.push_back(k);
    const std::vector<Ranked> estimated = ranked(unknown);
    for (const Ranked& e : estimated) known[e.index] = &e;
    for (size_t i = 0; i < candidates.size(); ++i)
      if (const Ranked& estimate = *known.at(keys[i].key.index); estimate.estimate.fits) {
        candidates[i].best = estimate;
        r.alternatives.push_back(std::move(candidates[i]));
      }
  }
  for (const auto& [k, l] : options.keep_refused ? all.all_misses : all.closest)
    r.pruned.push_back(
        {l, pruning_memory(model, cluster, training, l, options.execution), k.index});
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardplan
