// A pricer for tests and worked examples: every layer's forward takes the same time, its backward
// a fixed multiple of it, and every communication the same fixed time (0: free).
#pragma once

#include "simulator/event_simulator.h"

namespace shardplan {

struct UniformPricer : ActionPricer {
  double layer_forward_s = 1;
  double backward_factor = 2;  // backward ≈ 2 × forward (Narayanan et al. 2021 §3.5)
  double comm_s = 0;           // any send, collective, reduction or gather
  double optimizer_s = 0;
  int64_t chunk_activation_bytes = 1;

  // A compute action costs the share of its layer's forward its parts make up (attention_qkv and
  // attention_core a quarter each, mlp a half, router and experts a quarter each); the norms, the
  // embedding and the head are free, so stages with equal layers cost the same.
  double duration_s(const Program& p, const Action& a) const override;
  int64_t activation_bytes(const Program&, int) const override { return chunk_activation_bytes; }
};

}  // namespace shardplan
