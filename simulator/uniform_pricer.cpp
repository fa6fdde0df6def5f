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
      return share * layer_forward_s * (a.pass == Pass::backward ? backward_factor : 1);
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
