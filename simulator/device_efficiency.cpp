#include "simulator/device_efficiency.h"

#include <algorithm>

namespace shardplan {

namespace {

// The largest output tiles of cuBLAS's and CUTLASS's bf16 tensor-core GEMMs on Ampere and Hopper,
// the size NVIDIA's guide uses for its wave-quantization example on A100.
constexpr int64_t kTileLong = 256, kTileShort = 128;

// Output tiles per wave actually computed, ÷ tiles a full set of waves could compute (≤ 1).
double wave_utilization(int64_t m, int64_t n, int64_t count, int sm_count) {
  if (sm_count == 0) return 1;
  double best = 0;
  for (const auto& [tm, tn] :
       {std::pair{kTileLong, kTileShort}, std::pair{kTileShort, kTileLong}}) {
    const int64_t tiles = count * ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
    const int64_t waves = (tiles + sm_count - 1) / sm_count;
    const double useful =
        static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(count);
    best = std::max(
        best, useful / (static_cast<double>(waves * sm_count) * static_cast<double>(tm * tn)));
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
  return DeviceRates{.matmul_flops_per_s = peak * eff.matmul,
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
                   int64_t count) {
  const double flops =
      2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  if (r.profile)
    return with_noise(*r.profile,
                      static_cast<double>(count) * flops / gemm_rate_flops(*r.profile, m, n, k));
  const double bytes =
      static_cast<double>(elem_bytes) * (static_cast<double>(m) * static_cast<double>(k) +
                                         static_cast<double>(k) * static_cast<double>(n) +
                                         static_cast<double>(m) * static_cast<double>(n));
  const double compute_s = static_cast<double>(count) * flops /
                           (r.matmul_flops_per_s * wave_utilization(m, n, count, r.sm_count));
  return r.kernel_overhead_s +
         std::max(compute_s, static_cast<double>(count) * memory_time_s(r, bytes));
}

double kernel_time_s(const DeviceRates& r, MemoryKernel kernel, double elements, double bytes) {
  const double rate = r.profile ? kernel_rate_per_s(*r.profile, kernel, elements) : 0;
  return rate > 0 ? with_noise(*r.profile, elements / rate)
                  : r.kernel_overhead_s + memory_time_s(r, bytes);
}

}  // namespace shardplan
