#include "calibrate/calibrate_memory.h"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <cassert>
#include <fstream>
#include <functional>

namespace shardplan {

int64_t largest_cache_bytes() {
  int64_t largest = 0;
  for (int index = 0;; ++index) {
    std::ifstream in(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", index));
    int64_t size = 0;
    char unit = 0;
    if (!(in >> size)) return largest;
    in >> unit;
    largest = std::max(largest, size * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1));
  }
}

int64_t cold_copies(int64_t set_bytes, int64_t cold_bytes) {
  return std::clamp<int64_t>(cold_bytes / std::max<int64_t>(set_bytes, 1), 1, 256);
}

int64_t stream_elements() {
  const int64_t cache_bytes = largest_cache_bytes();
  if (cache_bytes <= 0) return 10'000'000;  // STREAM 5.10's STREAM_ARRAY_SIZE
  return 4 * cache_bytes / static_cast<int64_t>(sizeof(float));
}

std::vector<StreamResult> measure_stream(int64_t elements, const TimingOptions& t, MPI_Comm comm) {
  assert(elements > 0);
  Eigen::ArrayXf a = Eigen::ArrayXf::Constant(elements, 1.0f);
  Eigen::ArrayXf b = Eigen::ArrayXf::Constant(elements, 2.0f);
  Eigen::ArrayXf c = Eigen::ArrayXf::Zero(elements);
  const float s = 3.0f;  // STREAM's scalar
  struct Kernel {
    std::string_view name;
    int arrays;
    std::function<void()> run;
  };
  // STREAM's order and definitions: copy c = a, scale b = s·c, add c = a + b, triad a = b + s·c.
  const Kernel kernels[] = {{"copy", 2, [&] { c = a; }},
                            {"scale", 2, [&] { b = s * c; }},
                            {"add", 3, [&] { c = a + b; }},
                            {"triad", 3, [&] { a = b + s * c; }}};
  std::vector<StreamResult> out;
  for (const Kernel& k : kernels) {
    const double time_s = median_time_s(k.run, t, comm);
    const double bytes = static_cast<double>(k.arrays * elements) * sizeof(float);
    out.push_back({k.name, k.arrays, time_s, bytes / time_s / 1e9});
  }
  return out;
}

double triad_GBps(const std::vector<StreamResult>& results) {
  const auto it = std::find_if(results.begin(), results.end(),
                               [](const auto& r) { return r.kernel == "triad"; });
  assert(it != results.end());
  return it->GBps;
}

void print_stream(std::FILE* out, const std::vector<StreamResult>& results, int64_t elements) {
  fmt::print(out, "# STREAM, fp32 arrays of {} elements ({:.0f} MiB each), every rank at once\n",
             elements, static_cast<double>(elements) * sizeof(float) / (1 << 20));
  fmt::print(out, "# {:>8} {:>10} {:>10}\n", "kernel", "time (us)", "GB/s");
  for (const auto& r : results)
    fmt::print(out, "  {:>8} {:>10.1f} {:>10.2f}\n", r.kernel, r.time_s * 1e6, r.GBps);
  fmt::print(out, "\n");
}

}  // namespace shardplan
