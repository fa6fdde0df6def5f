// The cluster description: nodes of identical devices joined by an ordered list of interconnect
// levels, innermost first (NVLink inside a node or an NVL72 rack, then InfiniBand/RoCE across).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/enum_names.h"

namespace shardplan {

// What fraction of the datasheet peaks real kernels reach on a device — each figure with its
// source in the topology file, replaced by measurement once `shardplan calibrate` has run.
struct DeviceEfficiency {
  double matmul = 0;  // best achievable GEMM FLOP/s ÷ dense peak
  double matmul_fp8 = 0;  // the same for FP8 GEMMs ÷ the FP8 dense peak (0: no FP8)
  // The device's best fused attention kernel (FlashAttention-3 on Hopper, FlashAttention-2 on
  // Ampere), forward and backward FLOP/s ÷ dense peak.
  double attention_forward = 0;
  double attention_backward = 0;
  // FlashAttention-2 where it is not the best kernel (Hopper); absent: the same as the above.
  double flash2_forward = 0;
  double flash2_backward = 0;
  // FlashAttention-1-class kernels (FlashAttention 1 and the Triton kernels derived from it);
  // absent: the same as FlashAttention-2's.
  double flash1_forward = 0;
  double flash1_backward = 0;
  double memory = 0;  // achievable memory bandwidth ÷ memory_GBps
  int sm_count = 0;   // streaming multiprocessors for wave quantization (0: none)
  // The SM clock a training run sustains under the part's power and thermal limits ÷ the clock
  // its datasheet peaks assume; scales the tensor-core rates (GEMMs, attention), not memory.
  double sustained_clock = 1;
  // Device time one kernel costs beyond its work: launch, prologue and epilogue, the ramp and
  // tail of its waves. 0: none.
  double kernel_overhead_us = 0;

  bool operator==(const DeviceEfficiency&) const = default;
};

// The GPU generation, which picks NCCL's per-architecture tables (NVIDIA/nccl v2.20.3
// src/graph/tuning.cc indexes them by compute capability: Volta, Ampere (sm80, sm86, sm89),
// Hopper). `none`: not a GPU NCCL tunes for (CPU ranks under MPI, or unknown): no LL / LL128
// protocols and no kernel launch.
enum class GpuArch { none, volta, ampere, hopper, blackwell };
inline constexpr EnumNames<GpuArch, 5> kGpuArchNames{{{GpuArch::none, "none"},
                                                      {GpuArch::volta, "volta"},
                                                      {GpuArch::ampere, "ampere"},
                                                      {GpuArch::hopper, "hopper"},
                                                      {GpuArch::blackwell, "blackwell"}}};

struct Device;
// Whether the device's FP8 tensor-core GEMMs take only the TN layout: every architecture before
// Blackwell (core/dtype.h: fp8_copies_bytes).
bool fp8_gemms_tn_only(const Device& d);

struct Device {
  std::string name;              // "H100-SXM5-80GB"
  GpuArch arch = GpuArch::none;  // absent in a cluster file: none
  double memory_GiB = 0;         // capacity
  double reserved_GiB = 0;  // the CUDA context, its kernel modules and the driver (NCCL and cuBLAS
                            // are priced per layout: simulator/runtime_memory.h)
  double memory_GBps = 0;        // HBM (or DRAM) bandwidth
  // Dense peak FLOP/s by compute dtype, in 10^12 FLOP/s; 0 = not supported.
  double peak_tflops_fp32 = 0;
  double peak_tflops_tf32 = 0;
  double peak_tflops_bf16 = 0;
  double peak_tflops_fp16 = 0;
  // FP8 tensor cores (E4M3/E5M2 operands, Hopper and later); 0 = none. Not a Dtype: weights and
  // activations are never stored in it, only the linear layers' GEMM operands (Fp8Recipe).
  double peak_tflops_fp8 = 0;
  DeviceEfficiency efficiency;
  // The highest MFU a published training run reached on this GPU in the compute dtypes the cost
  // model prices (bf16/fp16); a prediction above it is flagged as optimistic. 0: none known.
  double best_published_mfu = 0;
  // The same for runs whose linear layers compute in FP8, as a fraction of the FP8 peak.
  double best_published_mfu_fp8 = 0;

  double peak_tflops(Dtype d) const;
  int64_t memory_bytes() const;    // memory_GiB in bytes
  int64_t reserved_bytes() const;  // reserved_GiB in bytes

  bool operator==(const Device&) const = default;
};

enum class LinkKind { nvlink, pcie, infiniband, roce, shared_memory };
inline constexpr EnumNames<LinkKind, 5> kLinkKindNames{
    {{LinkKind::nvlink, "nvlink"},
     {LinkKind::pcie, "pcie"},
     {LinkKind::infiniband, "infiniband"},
     {LinkKind::roce, "roce"},
     {LinkKind::shared_memory, "shared_memory"}}};

// One level of the interconnect. A level's domain is `span_devices` consecutive devices (8 for an
// NVLink node, 72 for an NVL72 rack); the outermost level spans the whole cluster (span 0).
// Scale-up levels (nvlink, pcie, shared_memory) give bandwidth per device; scale-out levels
// (infiniband, roce) give NICs per node and bandwidth per NIC, which the node's devices share.
struct InterconnectLevel {
  std::string name;  // "nvlink", "nvl72", "infiniband"
  LinkKind kind = LinkKind::nvlink;
  int64_t span_devices = 0;     // devices in one domain of this level; 0 = the whole cluster
  double bandwidth_GBps = 0;    // per device, one direction (scale-up levels)
  int nics_per_node = 0;        // scale-out levels
  double nic_GBps = 0;          // per NIC, one direction (scale-out levels)
  double latency_us = 0;        // one hop, as alpha in the alpha-beta model
  double oversubscription = 1;  // fabric oversubscription (1 = non-blocking fat tree)
  // Channels NCCL's topology search builds for a ring on this level (each one CTA on one SM while
  // a collective runs). 0: not given, nccl_channels() derives it.
  int nccl_channels = 0;
  // NVLink SHARP: the switch reduces (Hopper's third-generation NVSwitch and later), so NCCL can
  // run its NVLS algorithm on this level. Absent in a cluster file: false.
  bool nvlink_sharp = false;

  bool is_scale_out() const { return kind == LinkKind::infiniband || kind == LinkKind::roce; }

  bool operator==(const InterconnectLevel&) const = default;
};

// nccl_channels when given; otherwise one per NVLink link of 25 GB/s one direction (NVLink 3
// and 4: 12 links on A100, 18 on H100; the search's channels follow the links), two for a PCIe or
// shared-memory level (NCCL's minimum search result), and two per NIC of a node for a scale-out
// level (NCCL's search gives each NIC two channels), at most 32 (MAXCHANNELS / 2 of
// src/include/device.h, the rest kept for the duplicated peer channels).
int nccl_channels(const InterconnectLevel& l);

struct Cluster {
  std::string name;
  int nodes = 1;
  int devices_per_node = 1;
  Device device;
  std::vector<InterconnectLevel> levels;  // innermost first

  int64_t world() const { return int64_t{nodes} * devices_per_node; }
  // Span of level i in devices, with 0 resolved to world(). A domain larger than the cluster (an
  // NVL72 level on 4 nodes of 4 GPUs) holds all of it: the span is then world().
  int64_t level_span(size_t i) const;

  bool operator==(const Cluster&) const = default;
};

// Reads our cluster JSON (unknown keys rejected, "source" fields kept as documentation only).
// Validates before returning.
Cluster cluster_from_json(const nlohmann::json& j, const std::string& file);
nlohmann::json cluster_to_json(const Cluster& c);

// The same node description with `nodes` nodes (--nodes N); re-validated.
Cluster with_nodes(Cluster c, int nodes, const std::string& file);

// Positive sizes, levels ordered innermost first with growing spans that divide each other and
// the world (or exceed it: part of one domain), at least one level, the outermost spanning the
// whole cluster.
void validate_cluster(const Cluster& c, const std::string& file);

// Index of the innermost level whose domain holds both devices (global device indices).
size_t level_joining(const Cluster& c, int64_t device_a, int64_t device_b);

}  // namespace shardplan
