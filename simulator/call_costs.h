// One communication call's price kept by everything that decides it, so that estimate() prices a
// call once for all the layouts of a search: they run the same collectives and sends, of the same
// sizes, on the same spans over and over (every ZeRO stage, recomputation and schedule of a shape
// and micro-batch size, and every shape whose groups sit alike).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "core/placement.h"
#include "core/schedule.h"
#include "simulator/action_cost.h"

namespace shardplan {

// What group_action_cost and send_cost read: the action's kind, op, bytes and parameters, whether
// it reads cold input, the ZeRO stage (a reduce-scatter's local work) and the span. Its group is a
// field of the span.
struct CallKey {
  ActionKind kind = ActionKind::collective;
  Collective op = Collective::send_recv;
  bool cold_input = false;
  int zero = 0;
  int64_t bytes = 0;
  int64_t params = 0;
  GroupSpan span;
  bool operator==(const CallKey&) const = default;
};

struct CallKeyHash {
  size_t operator()(const CallKey& k) const {
    size_t h = 0;
    const auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (int64_t v :
         {int64_t(k.kind), int64_t(k.op), int64_t(k.cold_input), int64_t(k.zero), k.bytes, k.params,
          int64_t(k.span.group), int64_t(k.span.size), int64_t(k.span.level), int64_t(k.span.nodes),
          int64_t(k.span.max_ranks_per_node), int64_t(k.span.nic_sharers)})
      mix(std::hash<int64_t>{}(v));
    return h;
  }
};

// The calls priced so far; serves one cluster, dtype and set of options.
class CallCosts {
 public:
  template <class Price>
  const GroupActionCost& operator()(const CallKey& k, Price price) {
    const auto it = costs_.find(k);
    if (it != costs_.end()) return it->second;
    return costs_.emplace(k, price()).first->second;
  }

 private:
  std::unordered_map<CallKey, GroupActionCost, CallKeyHash> costs_;
};

}  // namespace shardplan
