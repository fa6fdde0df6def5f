#include "core/stage_split.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cassert>
#include <iterator>
#include <numeric>

#include "core/error.h"

namespace shardplan {

std::vector<int> stage_split(const Model& m, const Layout& l) {
  if (!l.stages.empty()) return l.stages;
  const int chunks = l.pp * l.vpp;
  assert(m.num_layers % chunks == 0);
  return std::vector<int>(static_cast<size_t>(chunks), m.num_layers / chunks);
}

std::vector<int> balanced_split(int layers, int chunks, int first_extra, int last_extra) {
  assert(layers > 0 && chunks > 0 && first_extra >= 0 && last_extra >= 0);
  const auto n = static_cast<size_t>(chunks);
  std::vector<int> load(n, 0), stages(n, 0);
  load.front() += first_extra;
  load.back() += last_extra;
  // Among equally loaded chunks, which takes the next layer: the farthest from the ends, then the
  // earlier (so that of the two ends the last, which holds the head, stays lighter).
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  const auto from_ends = [&](size_t i) { return std::min(i, n - 1 - i); };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return from_ends(a) > from_ends(b); });
  // Each layer goes to the least loaded chunk. The chunks at the lowest load take one each, in
  // `order`, before any other does; once all are level, whole rounds of n layers go at once (one
  // layer at a time cost layers × chunks per call, the planner's hot spot on 1,000-layer models).
  int left = layers;
  const auto give = [&](size_t i, int count) {
    load[i] += count;
    stages[i] += count;
    left -= count;
  };
  while (left > 0) {
    const auto [low, high] = std::minmax_element(load.begin(), load.end());
    const int level = *low;
    if (*low == *high && left >= chunks) {
      const int rounds = left / chunks;
      for (size_t i = 0; i < n; ++i) give(i, rounds);
      continue;
    }
    for (size_t i : order)
      if (left > 0 && load[i] == level) give(i, 1);
  }
  for (size_t i = 1; i + 1 < n; ++i)
    if (stages[i] == 0) return {};
  return stages;
}

std::vector<int> canonical_split(std::vector<int> stages) {
  if (std::adjacent_find(stages.begin(), stages.end(), std::not_equal_to<>()) == stages.end())
    stages.clear();
  return stages;
}

int head_layers(const Model& m) {
  const double layer = static_cast<double>(attention_params_per_layer(m) + mlp_params_per_layer(m));
  const double head = static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
  return std::clamp(static_cast<int>(std::lround(head / layer)), 1, 3);
}

std::vector<std::vector<int>> candidate_splits(const Model& m, int chunks) {
  const std::pair<int, int> counted[] = {{0, 0}, {0, 1}, {1, 1}, {0, head_layers(m)}};
  std::vector<std::vector<int>> out;
  for (const auto& [embedding, loss] : counted) {
    std::vector<int> s = balanced_split(m.num_layers, chunks, embedding, loss);
    if (s.empty()) continue;
    s = canonical_split(std::move(s));
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  }
  return out;
}

void check_split(const std::vector<int>& stages, const Model& m, const Layout& l,
                 const std::string& source) {
  const auto fail = [&](std::string reason, std::string hint = "") {
    throw InputError(source, "layout.stages", std::move(reason), std::move(hint));
  };
  const int64_t chunks = int64_t{l.pp} * l.vpp;
  if (std::ssize(stages) != chunks)
    fail(fmt::format("{} entries, needs one per virtual stage: pp × vpp = {} × {} = {}",
                     stages.size(), l.pp, l.vpp, chunks));
  for (size_t i = 0; i < stages.size(); ++i) {
    const bool end = i == 0 || i + 1 == stages.size();
    if (stages[i] < 0 || (stages[i] == 0 && !end))
      fail(fmt::format("virtual stage {} holds {} layers, needs at least 1", i, stages[i]),
           "only the first and last virtual stage may hold none (the embedding or the loss "
           "alone, as Megatron-LM's --account-for-*-in-pipeline-split allows)");
  }
  const int64_t sum = std::accumulate(stages.begin(), stages.end(), int64_t{0});
  if (sum != m.num_layers)
    fail(fmt::format("{} sums to {}, not num_hidden_layers={}", split_string(stages), sum,
                     m.num_layers));
}

std::vector<int> cost_balanced_split(const Model& m, int pp) {
  assert(pp > 0);
  // d_qkv = hidden / num_attention_heads in nanotron's costs, whatever the head dimension.
  const int64_t layer =
      4 * int64_t{m.num_heads} * (m.hidden / m.num_heads) * m.hidden + 3 * m.ffn_hidden * m.hidden;
  const int64_t total = m.num_layers * layer + m.vocab * m.hidden;
  std::vector<int> stages(static_cast<size_t>(pp), 0);
  // nanotron compares float thresholds total·(r+1)/pp; in integers, cost·pp > total·(r+1) (the
  // same but at an exact tie, which a float may round either way). The block that passes a
  // threshold stays on its rank, so every rank takes a layer while any is left.
  int64_t cost = 0;
  size_t rank = 0;
  for (int i = 0; i < m.num_layers; ++i) {
    ++stages[rank];
    cost += layer;
    if (cost * pp > total * static_cast<int64_t>(rank + 1)) ++rank;
  }
  return stages;
}

Layout split_as_run(Layout l, const Model& m, const Training& t) {
  if (t.layer_split != LayerSplit::cost_balanced || l.pp == 1 || l.vpp > 1 || !l.stages.empty())
    return l;
  l.stages = canonical_split(cost_balanced_split(m, l.pp));
  return l;
}

std::vector<int> megatron_first_last_split(int layers, int pp, int vpp, int first, int last,
                                           std::string& why) {
  if (pp < 2) {
    why = fmt::format("needs pp > 1, found pp={}", pp);
    return {};
  }
  // megatron/core/transformer/transformer_block.py get_num_layers_to_build: the layers left
  // after the given ends, evenly over the ranks left.
  int rest = layers, ranks_left = pp;
  for (int given : {first, last})
    if (given >= 0) rest -= given, --ranks_left;
  if (rest < 0 || (ranks_left == 0 && rest != 0) || (ranks_left > 0 && rest % ranks_left != 0)) {
    why = ranks_left == 0
              ? fmt::format("first + last = {} + {} does not equal num_hidden_layers={}", first,
                            last, layers)
              : fmt::format("the {} layers left do not divide over the other {} pipeline ranks",
                            rest, ranks_left);
    return {};
  }
  const int middle = ranks_left > 0 ? rest / ranks_left : 0;
  std::vector<int> stages(static_cast<size_t>(pp) * vpp);
  for (int rank = 0; rank < pp; ++rank) {
    int total = middle;
    if (rank == 0 && first >= 0) total = first;
    if (rank == pp - 1 && last >= 0) total = last;
    if (total % vpp != 0) {
      why = fmt::format("pipeline rank {} holds {} layers, which vpp={} does not divide", rank,
                        total, vpp);
      return {};
    }
    for (int chunk = 0; chunk < vpp; ++chunk)
      stages[static_cast<size_t>(chunk * pp + rank)] = total / vpp;
  }
  return stages;
}

std::vector<int> megatron_accounted_split(int layers, int pp, int vpp, bool embedding, bool loss,
                                          std::string& why) {
  // megatron/core/transformer/transformer_block.py: the embedding and the loss each count as a
  // layer, split evenly, then taken off the first and last virtual stage.
  const int counted = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (counted % (pp * vpp) != 0) {
    why = fmt::format("num_hidden_layers + {} = {} does not divide over pp × vpp = {} × {}",
                      counted - layers, counted, pp, vpp);
    return {};
  }
  std::vector<int> stages(static_cast<size_t>(pp) * vpp, counted / (pp * vpp));
  if (embedding) --stages.front();
  if (loss) --stages.back();
  if (std::any_of(stages.begin(), stages.end(), [](int n) { return n < 0; })) {
    why = "a virtual stage would hold fewer than no layers";
    return {};
  }
  return stages;
}

std::string megatron_layout_string(const std::vector<int>& stages) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < stages.size(); ++i) {
    std::string s = i == 0 ? "E" : "";
    if (stages[i] > 0) s += stages[i] == 1 ? "t" : fmt::format("t*{}", stages[i]);
    if (i + 1 == stages.size()) s += s.empty() ? "L" : ",L";
    parts.push_back(std::move(s));
  }
  // Runs of equal stages as "(t*8|)*14,": the first and last stage differ from all others.
  std::string out;
  for (auto run = parts.begin(); run != parts.end();) {
    const auto end =
        std::find_if(run, parts.end(), [&](const std::string& p) { return p != *run; });
    if (end - run >= 2)
      out += fmt::format("({}|)*{},", *run, end - run);
    else
      out += *run + (end == parts.end() ? "" : "|");
    run = end;
  }
  return out;
}

namespace {

// Far past any layout of a model shardplan plans (at most 4,096 layers, validate_model): counts
// multiply through nested parentheses, so "((t*999999)*999999)" would unroll to 10^12 characters,
// and each parenthesis is a level of recursion.
constexpr size_t kMaxUnrolled = size_t{1} << 20;
constexpr int kMaxNesting = 64;

// Unrolls "(...)*n" and "x*n" from `at` up to the closing parenthesis or the end. Empty `why` on
// success.
std::string unroll(const std::string& s, size_t& at, std::string& why, int depth = 0) {
  std::string out;
  while (at < s.size() && s[at] != ')' && why.empty()) {
    std::string atom;
    if (s[at] == '(') {
      if (depth == kMaxNesting) {
        why = fmt::format("parentheses nested deeper than {} levels", kMaxNesting);
        return out;
      }
      ++at;
      atom = unroll(s, at, why, depth + 1);
      if (at >= s.size()) why = "an unclosed parenthesis";
      ++at;
    } else {
      atom = s.substr(at++, 1);
    }
    int times = 1;
    if (at < s.size() && s[at] == '*') {
      const size_t digits = s.find_first_not_of("0123456789", ++at);
      const std::string n = s.substr(at, digits - at);
      if (n.empty() || n.size() > 6) {
        why = "\"*\" needs a count";
        return out;
      }
      times = std::stoi(n);
      at = digits == std::string::npos ? s.size() : digits;
    }
    if (out.size() + atom.size() * static_cast<size_t>(times) > kMaxUnrolled) {
      why = fmt::format("unrolls to more than {} entries", kMaxUnrolled);
      return out;
    }
    for (int i = 0; i < times; ++i) out += atom;
  }
  return out;
}

}  // namespace

std::vector<int> parse_megatron_layout_string(const std::string& layout, std::string& why) {
  std::string s;
  std::copy_if(layout.begin(), layout.end(), std::back_inserter(s),
               [](char c) { return c != ',' && c != ' ' && c != '\'' && c != '"'; });
  size_t at = 0;
  const std::string flat = unroll(s, at, why);
  if (why.empty() && at < s.size()) why = "an unopened parenthesis";
  if (!why.empty()) return {};
  std::vector<int> stages{0};
  for (size_t i = 0; i < flat.size(); ++i) {
    const char c = flat[i];
    if (c == '|') {
      stages.push_back(0);
    } else if (c == 't') {
      ++stages.back();
    } else if ((c == 'E' && i != 0) || (c == 'L' && i + 1 != flat.size())) {
      why = fmt::format("\"{}\" must come {} and once", c, c == 'E' ? "first" : "last");
    } else if (c != 'E' && c != 'L') {
      why = fmt::format("\"{}\" is not modelled (known: E, t, L)", c);
    }
    if (!why.empty()) return {};
  }
  if (flat.empty() || flat.front() != 'E' || flat.back() != 'L') {
    why = "must begin with the embedding \"E\" and end with the loss \"L\"";
    return {};
  }
  return stages;
}

std::string split_string(const std::vector<int>& stages) {
  std::vector<std::string> items;
  for (auto run = stages.begin(); run != stages.end();) {
    const auto end = std::find_if(run, stages.end(), [&](int n) { return n != *run; });
    if (end - run >= 3)
      items.push_back(fmt::format("{}*{}", *run, end - run));
    else
      for (auto it = run; it != end; ++it) items.push_back(std::to_string(*it));
    run = end;
  }
  return fmt::format("{}", fmt::join(items, ","));
}

}  // namespace shardplan
