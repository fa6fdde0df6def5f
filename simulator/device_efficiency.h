// What fraction of a device's datasheet peaks real kernels reach, and the kernel-time formulas built
// on them: a roofline per GEMM (compute-bound at the achievable matmul rate, memory-bound below the
// ridge point, so efficiency falls for small and skinny shapes; NVIDIA "Matrix Multiplication
// Background User's Guide", §"Math and memory bounds"), flash attention at its published rate, and
// memory-bound kernels at the achievable memory bandwidth. A calibrated profile replaces the table.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/cluster.h"
#include "core/dtype.h"

namespace shardplan {

struct DeviceEfficiency {
  std::string_view device;  // matched as a substring of Device::name; "" matches every device
  double matmul = 0;              // best achievable GEMM FLOP/s ÷ dense peak
  double attention_forward = 0;   // flash attention forward FLOP/s ÷ dense peak
  double attention_backward = 0;  // flash attention backward FLOP/s ÷ dense peak
  double memory = 0;              // achievable device-memory bandwidth ÷ datasheet
};

// The first row of the table whose `device` occurs in d.name (the generic row when none does).
const DeviceEfficiency& device_efficiency(const Device& d);

// Achievable rates of one device for one compute dtype.
struct DeviceRates {
  double matmul_flops_per_s = 0;
  double attention_forward_flops_per_s = 0;
  double attention_backward_flops_per_s = 0;
  double memory_bytes_per_s = 0;
};

DeviceRates device_rates(const Device& d, Dtype dtype);

// count GEMMs of (m×k)·(k×n) with elements of elem_bytes: the slower of their FLOPs at the matmul
// rate and of moving A, B and C once at the memory rate (roofline).
double gemm_time_s(const DeviceRates& r, int64_t m, int64_t k, int64_t n, int64_t elem_bytes,
                   int64_t count = 1);

inline double memory_time_s(const DeviceRates& r, double bytes) { return bytes / r.memory_bytes_per_s; }

}  // namespace shardplan
