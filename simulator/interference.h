// Compute slowed by the communication it overlaps. NCCL runs one CTA per channel, resident on its
// SM for the whole call (collective_cost.h, nccl_channels), so kernels overlapped with a collective
// run on sm_count − channels SMs. Averaged over the many waves of a layer's kernels, they lose
// channels / sm_count of their rate while it runs; that share of the overlapped time is added to
// the compute (Calculon prices TP overlap alike: "comm · processor_usage is still added",
// calculon/llm/layers.py). A kernel of a single wave can lose far more: an H100 GEMM of exactly 132
// CTAs beside a 24-CTA all-gather spilled into a second wave and took about 2× as long (NVIDIA
// developer forum, "Compute-Communication Overlap Causes Severe GEMM Performance Degradation
// because of Tail Effect"). Lee et al. 2025 (arXiv 2507.03114) measure overlapped compute 18.9%
// slower on average on A100 and H100; the part of that from contention for HBM and L2 is not
// modelled.
#pragma once

#include "core/cluster.h"
#include "core/placement.h"
#include "core/schedule.h"
#include "simulator/collective_cost.h"

namespace shardplan {

// The share of the device's compute that `a` takes while it runs on a communication stream beside
// compute: its NCCL channels ÷ the device's SMs. 0 for an action that runs on the compute stream
// (nothing runs beside it), a send (a pipeline message's one or two channels are left out), a
// group of one, or a device with no SM count (CPU ranks, whose collectives run on the rank's
// thread between its compute). `cost` is the action's collective as priced on `span`.
double interference_share(const Cluster& c, const Action& a, const GroupSpan& span,
                          const CollectiveCost& cost);

}  // namespace shardplan
