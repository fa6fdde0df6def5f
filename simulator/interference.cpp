#include "simulator/interference.h"

namespace shardplan {

double interference_share(const Cluster& c, const Action& a, const GroupSpan& span,
                          const CollectiveCost& cost) {
  const int sms = c.device.efficiency.sm_count;
  if (sms == 0 || a.stream == Stream::compute || !is_group_action(a) || span.size == 1) return 0;
  return static_cast<double>(nccl_channels(c, cost, a.bytes, span)) / sms;
}

}  // namespace shardplan
