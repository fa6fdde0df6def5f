// The compute of one micro-batch split as the schedule splits it, for the simulator's pricer.
// Defined in compute_model.cpp beside microbatch_compute; a header of its own so that the cost
// model's users do not see the schedule's names.
#pragma once

#include <array>

#include "core/layout.h"
#include "core/model.h"
#include "core/schedule.h"
#include "core/training.h"
#include "simulator/compute_model.h"

namespace shardplan {

// One micro-batch's passes over one layer, or over the model's ends, split by the parts the
// schedule runs as separate compute actions (core/schedule.h): attention_qkv (input norm, QKV
// projection, rotary embedding), attention_core (attention, output projection, residual add), mlp
// (pre-MLP norm, MLP, residual add) or router (pre-MLP norm, gate) and experts (permutation,
// expert MLPs, residual add); embedding (lookup); head (final norm, LM head, cross entropy).
// microbatch_compute is the sum of these over a stage's layers and ends.
struct PartsCompute {
  std::array<MicrobatchCompute, kPartNames.size()> parts{};

  MicrobatchCompute& operator[](Part p) { return parts[static_cast<size_t>(p)]; }
  const MicrobatchCompute& operator[](Part p) const { return parts[static_cast<size_t>(p)]; }
};

PartsCompute layer_compute(const Model& m, const Training& t, const Layout& l, bool moe_layer,
                           const DeviceRates& r, const ExecutionOptions& x);
// The embedding and head parts, whichever stage holds them.
PartsCompute ends_compute(const Model& m, const Training& t, const Layout& l, const DeviceRates& r);

}  // namespace shardplan
