// Device memory a rank uses outside its framework's tensors, which nvidia-smi shows beside the
// caching allocator's reserve and PyTorch's own counters do not: the CUDA context, cuBLAS's
// workspaces and NCCL's buffers, one set per communicator the rank belongs to.
#pragma once

#include <cstdint>

#include "core/cluster.h"
#include "core/layout.h"

namespace shardplan {

struct RuntimeMemory {
  int64_t cuda_context_bytes = 0;      // the device's reserved_GiB: context, modules, driver
  int64_t cublas_workspace_bytes = 0;  // one workspace per cuBLAS handle
  int64_t nccl_buffer_bytes = 0;       // every communicator's channel buffers

  int64_t total() const { return cuda_context_bytes + cublas_workspace_bytes + nccl_buffer_bytes; }
};

// Per NCCL connection (one channel, one peer, one direction): LL 0.5 MiB + LL128 4.6875 MiB +
// Simple 4 MiB (NVIDIA/nccl src/include/device.h, init.cc computeBuffSizes), each side of the P2P
// transport rounded up to CUDA_IPC_MIN, 2 MiB (src/transport/p2p.cc): 10 MiB at the receiver and
// 2 MiB at the sender (NVIDIA/nccl issue #1685's ALLOC log on H100: 10,485,760 and 2,097,152 B).
inline constexpr int64_t kNcclConnectionBytes = int64_t{12} << 20;

// The rank of pipeline stage `stage` whose other coordinates are 0 (every rank of a stage holds
// communicators of the same sizes and spans):
//   context: the device's reserved_GiB;
//   cuBLAS: two handles, the forward's thread's and autograd's backward thread's (PyTorch keeps
//     one per thread and stream), each with PyTorch's default workspace, 32 MiB on Hopper and
//     later, 8,519,680 B before (aten/src/ATen/cuda/CublasHandlePool.cpp, ":4096:2:16:8");
//   NCCL: each collective communicator of more than one rank (tp, cp, ep, the data-parallel one,
//     the expert data-parallel one, and PyTorch's default group over the world, which frameworks'
//     barriers create) holds one ring connection per channel of its level (core/cluster.h:
//     nccl_channels), twice that once it spans nodes (the tree's connections; "Ring uses a
//     limited amount of memory as it only has 2 connections regardless of the scale", NVIDIA/nccl
//     issue #864); a pipeline communicator holds two channels per neighbouring stage
//     (NCCL_NCHANNELS_PER_NET_PEER's default). NVLS's buffers (H100 NVSwitch, version-dependent:
//     256 MiB to 2.25 GiB per communicator) are left out.
// A device without NCCL or cuBLAS (arch none: CPU ranks) has only its reserved_GiB.
RuntimeMemory runtime_memory(const Cluster& c, const Layout& l, int stage);

}  // namespace shardplan
