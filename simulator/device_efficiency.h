// What fraction of a device's datasheet peaks real kernels reach, and the kernel-time formulas
// built on them: a roofline per GEMM whose compute side counts whole waves of output tiles over the
// SMs (NVIDIA "Matrix Multiplication Background User's Guide": math and memory bounds, tile and
// wave quantization) with the tile size and split of k a library picks, so efficiency falls for
// small shapes and shallow k; flash attention at its published rate; memory-bound kernels at the
// achievable memory bandwidth. The fractions of peak come from the device description
// (Device::efficiency, each with its source). With a calibration profile, GEMMs run at the rates
// it measured for their shapes and memory-bound kernels at its measured bandwidth, with no
// datasheet efficiency on top.
#pragma once

#include <cstdint>
#include <utility>

#include "core/cluster.h"
#include "core/dtype.h"
#include "core/framework.h"
#include "core/memory_kernel.h"
#include "core/profile.h"

namespace shardplan {

// A GEMM tile's fixed cost, as k-steps of its main loop: filling the operand pipeline before the
// first multiply and writing the tile out after the last. Fitted, with the GPU's own rate and fixed
// cost per kernel, on the H100's cuBLAS GEMMs of data/gpu_runs/h100-gemm-shapes-2026-11-26/
// (tests/simulator/gemm_shape_fit_test.cpp refits it: build/tests/test_simulator '[gemm-fit]' -s);
// taken as the same on other tensor-core GPUs for want of a measurement.
inline constexpr double kGemmTileFixedK = 111;

// Achievable rates of one device for one compute dtype.
struct DeviceRates {
  double matmul_flops_per_s = 0;
  double fp8_matmul_flops_per_s = 0;         // FP8 GEMMs (Device::peak_tflops_fp8); 0: none
  bool fp8_tn_only = true;  // FP8 GEMMs take only the TN layout (core/cluster.h fp8_gemms_tn_only)
  double attention_forward_flops_per_s = 0;  // the device's best fused attention
  double attention_backward_flops_per_s = 0;
  double flash2_forward_flops_per_s = 0;  // FlashAttention-2
  double flash2_backward_flops_per_s = 0;
  double flash1_forward_flops_per_s = 0;  // FlashAttention-1 class (FA1, its Triton kernels)
  double flash1_backward_flops_per_s = 0;
  double memory_bytes_per_s = 0;
  int sm_count = 0;
  double kernel_overhead_s = 0;  // per kernel, on the device (none with a profile: it measured)
  double gemm_tile_fixed_k = kGemmTileFixedK;
  // Measured GEMM rates (gemm_rate_flops) that replace matmul_flops_per_s and the roofline; null
  // when pricing from the datasheet. Not owned.
  const Profile* profile = nullptr;
};

// A flash attention kernel's forward and backward FLOP/s: FlashAttention-1 and -2 at their own
// rates, FlashAttention-3 at the device's best (unfused attention is GEMMs and a softmax, priced
// as those).
std::pair<double, double> flash_attention_flops_per_s(const DeviceRates& r, AttentionKernel k);

// From the datasheet peaks × Device::efficiency; with a profile, memory_bytes_per_s is the
// profile's memory_GBps as measured, and GEMMs are priced from its rates (gemm_time_s), every
// measured rate slowed by the profile's noise (Profile::noise), which its medians leave out.
DeviceRates device_rates(const Device& d, Dtype dtype, const Profile* profile = nullptr);

// The rates FP8 GEMMs run at: matmul_flops_per_s at the FP8 rate, and a tile's fixed cost as long
// as at the 16-bit rate (its prologue fills and its epilogue writes the same tile), hence more
// k-steps of the faster loop. Expects fp8_matmul_flops_per_s > 0 and no profile (it measured
// 16-bit GEMMs).
DeviceRates fp8_gemm_rates(const DeviceRates& r);

// count GEMMs of (m×k)·(k×n) with elements of elem_bytes: the device's fixed cost per kernel and
// the slower of computing them and of moving A, B and C once at the memory rate (roofline).
// Computing runs the count·⌈m/tm⌉·⌈n/tn⌉ output tiles, times the split of k, in waves of sm_count
// tiles, each wave as long as one tile's k-loop plus its fixed cost at the matmul rate per SM, with
// the tile (256×128 down to 64×128) and split of k that finish soonest. With a profile:
// count · 2mkn FLOPs at gemm_rate_flops for the shape, which measured all of that.
// `out_bytes`: C's element size where it differs from A's and B's (FP8 operands, a 16-bit
// output); 0: elem_bytes.
double gemm_time_s(const DeviceRates& r, int64_t m, int64_t k, int64_t n, int64_t elem_bytes,
                   int64_t count = 1, int64_t out_bytes = 0);

inline double memory_time_s(const DeviceRates& r, double bytes) {
  return bytes / r.memory_bytes_per_s;
}

// One memory-bound kernel over `elements` (core/memory_kernel.h) that moves `bytes`: at the
// profile's measured rate for the kernel where it has one, else the bytes at the memory rate.
double kernel_time_s(const DeviceRates& r, MemoryKernel kernel, double elements, double bytes);

}  // namespace shardplan
