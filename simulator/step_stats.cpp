// Per-rank figures of a timed step.
#include "simulator/step_stats.h"

#include <algorithm>
#include <cassert>

namespace shardplan {
namespace {

struct Interval {
  double begin = 0, end = 0;
};

// Sorted, disjoint union of intervals.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.begin <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

// Length of `a` not covered by `b` (both sorted and disjoint).
double uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  size_t j = 0;
  for (const Interval& i : a) {
    double covered = 0;
    while (j < b.size() && b[j].end <= i.begin) ++j;
    for (size_t k = j; k < b.size() && b[k].begin < i.end; ++k)
      covered += std::min(i.end, b[k].end) - std::max(i.begin, b[k].begin);
    total += (i.end - i.begin) - covered;
  }
  return total;
}

void peak_activations(const Program& p, const std::vector<ActionTiming>& timings,
                      const std::function<int64_t(int)>& activation_bytes,
                      const std::function<int64_t(int)>& weight_grad_bytes, RankStats& s) {
  struct Change {
    double time_s;
    int chunks;
    int64_t bytes;
    const Action* action;
  };
  std::vector<Change> changes;
  for (size_t i = 0; i < p.actions.size(); ++i) {
    const Action& a = p.actions[i];
    if (a.flags & kAllocatesActivations)
      changes.push_back({timings[i].start_s, 1, activation_bytes(a.chunk), &a});
    if (a.flags & kKeepsWeightGradInputs)
      changes.push_back({timings[i].end_s, 0,
                         weight_grad_bytes(a.chunk) - activation_bytes(a.chunk), &a});
    if (a.flags & kFreesActivations)
      changes.push_back({timings[i].end_s, -1,
                         -(a.pass == Pass::weight_grad ? weight_grad_bytes(a.chunk)
                                                                   : activation_bytes(a.chunk)),
                         &a});
  }
  // At equal times frees come first: a backward's activations are gone before the next forward's.
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.time_s != b.time_s ? a.time_s < b.time_s : a.chunks < b.chunks;
  });
  int chunks = 0;
  int64_t bytes = 0;
  for (const Change& c : changes) {
    chunks += c.chunks;
    bytes += c.bytes;
    s.activations.push_back({c.time_s, chunks, bytes});
    s.peak_activation_chunks = std::max(s.peak_activation_chunks, chunks);
    if (bytes > s.peak_activation_bytes) {
      s.peak_activation_bytes = bytes;
      s.peak_activation_s = c.time_s;
      s.peak_micro_batch = c.action->micro_batch;
      s.peak_chunk = c.action->chunk;
    }
  }
}

}  // namespace

RankStats rank_stats(const Program& p, const std::vector<ActionTiming>& timings, double step_time_s,
                     const std::function<int64_t(int chunk)>& activation_bytes,
                     const std::function<int64_t(int chunk)>& weight_grad_bytes) {
  assert(timings.size() == p.actions.size());
  RankStats s;
  s.rank = p.rank;
  std::vector<Interval> compute, comm;
  for (size_t i = 0; i < p.actions.size(); ++i) {
    const Action& a = p.actions[i];
    const Interval t{timings[i].start_s, timings[i].end_s};
    s.stream_busy_s[static_cast<size_t>(a.stream)] += t.end - t.begin;
    if (t.end <= t.begin) continue;
    (a.stream == Stream::compute ? compute : comm).push_back(t);
  }
  compute = merged(std::move(compute));
  for (const Interval& i : compute) s.busy_s += i.end - i.begin;
  s.idle_s = step_time_s - s.busy_s;
  s.exposed_comm_s = uncovered(merged(std::move(comm)), compute);
  s.bubble_s = s.idle_s - s.exposed_comm_s;
  peak_activations(p, timings, activation_bytes, weight_grad_bytes, s);
  return s;
}

}  // namespace shardplan
