// What fraction of a device's datasheet peaks real kernels reach, and the kernel-time formulas
// built on them: a roofline per GEMM whose compute side counts whole waves of output tiles over the
// SMs (NVIDIA "Matrix Multiplication Background User's Guide": math and memory bounds, tile and
// wave quantization), so efficiency falls for small and skinny shapes; flash attention at its
// published rate; memory-bound kernels at the achievable memory bandwidth. A calibrated profile
// replaces the table.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/cluster.h"
#include "core/dtype.h"

namespace shardplan {

struct DeviceEfficiency {
  std::string_view device;        // matched as a substring of Device::name; "" matches every device
  double matmul = 0;              // best achievable GEMM FLOP/s ÷ dense peak
  double attention_forward = 0;   // flash attention forward FLOP/s ÷ dense peak
  double attention_backward = 0;  // flash attention backward FLOP/s ÷ dense peak
  double memory = 0;              // achievable device-memory bandwidth ÷ datasheet
  int sm_count = 0;               // streaming multiprocessors (0: waves not modelled)
};

// The first row of the table whose `device` occurs in d.name (the generic row when none does).
const DeviceEfficiency& device_efficiency(const Device& d);

// Achievable rates of one device for one compute dtype.
struct DeviceRates {
  double matmul_flops_per_s = 0;
  double attention_forward_flops_per_s = 0;
  double attention_backward_flops_per_s = 0;
  double memory_bytes_per_s = 0;
  int sm_count = 0;
};

DeviceRates device_rates(const Device& d, Dtype dtype);

// count GEMMs of (m×k)·(k×n) with elements of elem_bytes: the slower of computing them and of
// moving A, B and C once at the memory rate (roofline). Computing runs the count·⌈m/tm⌉·⌈n/tn⌉
// output tiles of 128×256 (or 256×128, whichever wastes less) in waves of sm_count tiles, each
// wave as long as a full one at the matmul rate.
double gemm_time_s(const DeviceRates& r, int64_t m, int64_t k, int64_t n, int64_t elem_bytes,
                   int64_t count = 1);

inline double memory_time_s(const DeviceRates& r, double bytes) {
  return bytes / r.memory_bytes_per_s;
}

}  // namespace shardplan
