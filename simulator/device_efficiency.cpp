#include "simulator/device_efficiency.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>

namespace shardplan {

namespace {

// The output tiles (CTA tiles) cuBLAS's and CUTLASS's tensor-core GEMMs choose among on Ampere
// and Hopper for 16-bit operands (CUTLASS's default kernel configurations: 256×128, 128×256,
// 128×128, 128×64, 64×128), each at the same rate per SM: cuBLAS on an H100 ran skinny shapes,
// which only the smaller tiles fill the SMs with, as fast as square ones (data/gpu_runs/
// h100-gemm-shapes-2026-11-26: 2048×256×16384 at 407 TFLOP/s against 256×128 tiles' 16 of 132
// SMs busy).
constexpr std::array<std::pair<int64_t, int64_t>, 5> kTiles = {
    {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}}};

// Split-K: when the output's tiles leave SMs idle, cuBLAS splits the k loop over several CTAs and
// sums their fp32 partial tiles afterwards (CUTLASS's split-K serial and parallel modes). Each
// slice keeps at least kMinSliceK of k, the depth below which a slice is all prologue.
constexpr std::array<int64_t, 8> kSplits = {1, 2, 3, 4, 6, 8, 12, 16};
constexpr int64_t kMinSliceK = 256;

// The time of count GEMMs' math, `flops` in all, at rate (the whole device's FLOP/s): each wave of
// sm_count tiles as long as one tile's k-loop and fixed cost, with the tile and split of k that
// finish soonest, as cuBLAS's heuristics pick them; a split's partial tiles go through memory once
// more (written and read in fp32).
double gemm_compute_s(const DeviceRates& r, double flops, int64_t m, int64_t k, int64_t n,
                      int64_t count) {
  if (r.sm_count == 0) return flops / r.matmul_flops_per_s;
  const double tile_rate = r.matmul_flops_per_s / r.sm_count;
  // The fp32 partial tiles of one slice of k, written and read.
  const double slice_partials_s = memory_time_s(
      r, 8.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(count));
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [tm, tn] : kTiles) {
    const int64_t tiles = count * ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
    for (const int64_t split : kSplits) {
      if (split > 1 && k < split * kMinSliceK) break;
      const int64_t waves = (tiles * split + r.sm_count - 1) / r.sm_count;
      const double slice_k = static_cast<double>(k) / static_cast<double>(split);
      double t = static_cast<double>(waves) * 2.0 * static_cast<double>(tm * tn) *
                 (slice_k + r.gemm_tile_fixed_k) / tile_rate;
      if (split > 1) t += static_cast<double>(split) * slice_partials_s;
      best = std::min(best, t);
    }
  }
  return best;
}

// A measured time as a step pays it: the profile's medians and its noise on top (Profile::noise).
double with_noise(const Profile& p, double median_s) {
  return median_s * (1 + p.noise);
}

}  // namespace

DeviceRates device_rates(const Device& d, Dtype dtype, const Profile* profile) {
  const DeviceEfficiency& eff = d.efficiency;
  // Tensor-core rates follow the clock the part sustains, below the one its peak assumes.
  const double peak = d.peak_tflops(dtype) * 1e12 * eff.sustained_clock;
  const double memory_bytes_per_s = profile ? profile->memory_GBps * 1e9 / (1 + profile->noise)
                                            : d.memory_GBps * 1e9 * eff.memory;
  return DeviceRates{
      .matmul_flops_per_s = peak * eff.matmul,
      .fp8_matmul_flops_per_s = d.peak_tflops_fp8 * 1e12 * eff.sustained_clock * eff.matmul_fp8,
      .fp8_tn_only = fp8_gemms_tn_only(d),
      .attention_forward_flops_per_s = peak * eff.attention_forward,
      .attention_backward_flops_per_s = peak * eff.attention_backward,
      .flash2_forward_flops_per_s = peak * eff.flash2_forward,
      .flash2_backward_flops_per_s = peak * eff.flash2_backward,
      .flash1_forward_flops_per_s = peak * eff.flash1_forward,
      .flash1_backward_flops_per_s = peak * eff.flash1_backward,
      .memory_bytes_per_s = memory_bytes_per_s,
      .sm_count = eff.sm_count,
      .kernel_overhead_s = profile ? 0 : eff.kernel_overhead_us * 1e-6,
      .profile = profile};
}

DeviceRates fp8_gemm_rates(const DeviceRates& r) {
  assert(r.fp8_matmul_flops_per_s > 0 && !r.profile);
  DeviceRates fp8 = r;
  fp8.matmul_flops_per_s = r.fp8_matmul_flops_per_s;
  fp8.gemm_tile_fixed_k = r.gemm_tile_fixed_k * r.fp8_matmul_flops_per_s / r.matmul_flops_per_s;
  return fp8;
}

std::pair<double, double> flash_attention_flops_per_s(const DeviceRates& r, AttentionKernel k) {
  switch (k) {
    case AttentionKernel::flash1:
      return {r.flash1_forward_flops_per_s, r.flash1_backward_flops_per_s};
    case AttentionKernel::flash2:
      return {r.flash2_forward_flops_per_s, r.flash2_backward_flops_per_s};
    case AttentionKernel::unfused:
    case AttentionKernel::flash3:
      break;
  }
  return {r.attention_forward_flops_per_s, r.attention_backward_flops_per_s};
}

double gemm_time_s(const DeviceRates& r, int64_t m, int64_t k, int64_t n, int64_t elem_bytes,
                   int64_t count, int64_t out_bytes) {
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) *
                       static_cast<double>(n) * static_cast<double>(count);
  if (r.profile) return with_noise(*r.profile, flops / gemm_rate_flops(*r.profile, m, n, k));
  const double bytes =
      static_cast<double>(elem_bytes) * (static_cast<double>(m) * static_cast<double>(k) +
                                         static_cast<double>(k) * static_cast<double>(n)) +
      static_cast<double>(out_bytes > 0 ? out_bytes : elem_bytes) * static_cast<double>(m) *
          static_cast<double>(n);
  return r.kernel_overhead_s + std::max(gemm_compute_s(r, flops, m, k, n, count),
                                        static_cast<double>(count) * memory_time_s(r, bytes));
}

double kernel_time_s(const DeviceRates& r, MemoryKernel kernel, double elements, double bytes) {
  const double rate = r.profile ? kernel_rate_per_s(*r.profile, kernel, elements) : 0;
  return rate > 0 ? with_noise(*r.profile, elements / rate)
                  : r.kernel_overhead_s + memory_time_s(r, bytes);
}

}  // namespace shardplan
