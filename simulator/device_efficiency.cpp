#include "simulator/device_efficiency.h"

#include <algorithm>
#include <array>

namespace shardplan {

namespace {

// Sources.
// matmul: "Maximum Achievable Matmul FLOPS" measured with mamf-finder.py over a sweep of shapes,
//   bf16, table in S. Bekman, "Machine Learning Engineering", compute/accelerator chapter (2024):
//   A100 SXM 271.2 of 312 TFLOP/s (0.869), H100 SXM 794.5 of 989 TFLOP/s (0.803). H200 and GH200
//   carry the same GH100 die and clocks as H100 SXM: the H100 figure is used for them.
// attention: FlashAttention-2 (Dao 2023, §4.1) reaches up to 73% of A100 peak forward and 63%
//   backward. FlashAttention-3 (Shah et al. 2024, §4.1) reaches 740 of 989 TFLOP/s forward on
//   H100 (0.75) and a backward 1.5–1.75× faster than FlashAttention-2, which runs at about 35% of
//   H100 peak (same paper, §1): 0.35 × 1.6 = 0.56.
// memory: STREAM-triad-like kernels (BabelStream, Deakin et al. 2018) reach about 90% of the
//   datasheet HBM bandwidth on A100 and H100.
// sm_count: NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs), NVIDIA H100 Tensor
//   Core GPU Architecture whitepaper (132 SMs on H100 SXM5; H200 and GH200 alike).
// Generic row (any other device, CPUs included): the smallest figure of each column above, no
// wave quantization.
constexpr std::array<DeviceEfficiency, 4> kTable{{
    {"A100-SXM", 0.869, 0.73, 0.63, 0.90, 108},
    {"H100-SXM", 0.803, 0.75, 0.56, 0.90, 132},
    {"H200", 0.803, 0.75, 0.56, 0.90, 132},  // also matches GH200
    {"", 0.803, 0.73, 0.56, 0.90, 0},
}};

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

}  // namespace

const DeviceEfficiency& device_efficiency(const Device& d) {
  for (const DeviceEfficiency& row : kTable)
    if (d.name.find(row.device) != std::string::npos) return row;
  return kTable.back();
}

DeviceRates device_rates(const Device& d, Dtype dtype) {
  const DeviceEfficiency& eff = device_efficiency(d);
  const double peak = d.peak_tflops(dtype) * 1e12;
  return DeviceRates{peak * eff.matmul, peak * eff.attention_forward, peak * eff.attention_backward,
                     d.memory_GBps * 1e9 * eff.memory, eff.sm_count};
}

double gemm_time_s(const DeviceRates& r, int64_t m, int64_t k, int64_t n, int64_t elem_bytes,
                   int64_t count) {
  const double flops =
      2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  const double bytes =
      static_cast<double>(elem_bytes) * (static_cast<double>(m) * static_cast<double>(k) +
                                         static_cast<double>(k) * static_cast<double>(n) +
                                         static_cast<double>(m) * static_cast<double>(n));
  const double compute_s = static_cast<double>(count) * flops /
                           (r.matmul_flops_per_s * wave_utilization(m, n, count, r.sm_count));
  return std::max(compute_s, static_cast<double>(count) * memory_time_s(r, bytes));
}

}  // namespace shardplan
