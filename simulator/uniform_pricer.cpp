// The uniform test pricer.
#include "simulator/uniform_pricer.h"

namespace shardplan {

double UniformPricer::duration_s(const Program&, const Action& a) const {
  switch (a.kind) {
    case ActionKind::compute: {
      double share = 0;
      for (Part part : {Part::attention_qkv, Part::attention_core, Part::router, Part::experts})
        if (has_part(a.parts, part)) share += 0.25;
      if (has_part(a.parts, Part::mlp)) share += 0.5;
      // A backward is dgrad and wgrad, a forward's FLOPs each: under a split backward B runs the
      // first, W the second.
      double factor = 1;
      if (a.pass == Pass::backward)
        factor = (a.flags & kInputGradOnly) ? backward_factor - 1 : backward_factor;
      return share * layer_forward_s * factor;
    }
    case ActionKind::optimizer_step:
      return optimizer_s;
    case ActionKind::recv:
      return 0;
    default:
      return comm_s;
  }
}

}  // namespace shardplan
