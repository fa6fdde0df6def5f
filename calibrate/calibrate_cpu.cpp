#include "calibrate/calibrate_cpu.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>

#include "calibrate/calibrate_gemm.h"
#include "calibrate/calibrate_kernels.h"
#include "calibrate/calibrate_memory.h"
#include "calibrate/calibrate_noise.h"
#include "core/error.h"
#include "core/statistics.h"

namespace shardplan {

namespace {

// /proc/cpuinfo's "model name", the device the GEMMs and STREAM ran on.
std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos)
      return line.substr(line.find_first_not_of(' ', colon + 1)) + " core";
  }
  return "CPU core";
}

// Each timing's median over the passes (every pass times the same things in the same order).
template <class Timing>
std::vector<Timing> median_over_passes(const std::vector<std::vector<Timing>>& passes) {
  assert(!passes.empty());
  std::vector<Timing> out = passes.front();
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<double> times;
    for (const auto& pass : passes) times.push_back(pass[i].time_s);
    out[i].time_s = median(std::move(times));
  }
  return out;
}

}  // namespace

Profile calibrate_cpu(const CalibrateOptions& o, MPI_Comm world, std::FILE* out) {
  int rank = 0, world_size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &world_size);
  validate_calibrate_options(o, world_size);
  Profile p;
  p.backend = Backend::cpu;
  p.device = cpu_model_name();
  p.ranks = world_size;
  p.dtype = o.dtype;
  if (rank == 0)
    fmt::print(out, "# shardplan calibrate: {} rank{} of {}, {}\n\n", world_size,
               world_size == 1 ? "" : "s", p.device, enum_name(o.dtype, kDtypeNames));

  const std::vector<LayerShare> shares = layer_shares(o);
  TensorAllocator alloc("calibration");
  // Operands from memory, as in a training step, where a layer's weights and saved activations
  // were last touched a pass ago (STREAM's rule for its arrays, halved, as the collectives'
  // buffers; calibrate_collective.cpp).
  const int64_t cold_bytes = 2 * largest_cache_bytes();
  // Recorded once for every pass: CpuKernels<T> makes attention one head a call whatever T is.
  const std::vector<GemmCall> calls =
      model_gemm_calls(shares, heads_per_call_of(cpu_kernels<float>()));
  std::vector<std::vector<GemmTiming>> gemm_passes;
  std::vector<std::vector<KernelTiming>> kernel_passes;
  const auto timed_in = [&](auto& dev) {
    gemm_passes.push_back(time_gemm_calls(calls, o.timing, world, dev, alloc, cold_bytes));
    kernel_passes.push_back(model_kernel_timings(shares, o.timing, world, dev, alloc));
  };
  const auto compute_pass = [&] {
    if (o.dtype == Dtype::bf16)
      timed_in(cpu_kernels<bf16>());
    else
      timed_in(cpu_kernels<float>());
  };
  // The passes are spread over the calibration, the other measurements between them (the noise
  // and STREAM after the first, the collectives after the second), so that a slow spell lasting a
  // pass or two meets no shape's passes twice. Their tables are printed after the collectives'.
  compute_pass();

  // Quanta as long as the samples the rates are medians of (10 ms), for 1 s in all (a training
  // step's length: gpt-small's 0.7 s on 2 ranks), their noise priced (Profile::noise); then quanta
  // of 1 and 3 ms, around the compute between a step's tp synchronisations (gpt-small tp2: 272 in
  // 0.85 s, 3 ms each), printed.
  std::vector<NoiseTiming> noise = time_noise(
      world, {o.timing.min_sample_s}, static_cast<int>(std::ceil(1.0 / o.timing.min_sample_s)));
  p.noise = noise_share(noise.front());
  // A mean of twice the median is no longer noise a step's median meets (core/profile.cpp's
  // range): the cores were shared with other work (seen on a 2-core CI machine beside a build).
  if (!(p.noise < 1))
    throw std::runtime_error(fmt::format(
        "calibration: these cores were busy with other work: fixed work quanta took {:.2f} times "
        "their median on average (noise {:+.0f}%), and the rates measured with them carry that "
        "load; calibrate on an idle machine",
        1 + p.noise, 100 * p.noise));
  if (!o.compute_only) {
    const std::vector<NoiseTiming> longer = time_noise(world, {1e-3, 3e-3}, 100);
    noise.insert(noise.end(), longer.begin(), longer.end());
  }
  const int64_t elements = o.stream_elements > 0 ? o.stream_elements : stream_elements();
  const auto stream = measure_stream(elements, o.one_pass_timing(), world);
  p.memory_GBps = triad_GBps(stream);
  if (!o.compute_only) {
    if (o.compute_passes() > 1) compute_pass();
    p.collectives = measure_collectives(
        o.sweep, world, [](MPI_Comm group) { return std::make_unique<MpiCollectiveRunner>(group); },
        out);
    while (static_cast<int>(gemm_passes.size()) < o.compute_passes()) compute_pass();
  }

  const auto gemm = median_over_passes(gemm_passes);
  if (rank == 0) print_gemm_timings(out, gemm);
  p.gemm = gemm_rates(gemm);
  const auto kernels = median_over_passes(kernel_passes);
  if (rank == 0) print_kernel_timings(out, kernels);
  p.kernels = kernel_rates(kernels);
  if (rank == 0) print_noise(out, noise);
  if (rank == 0) print_stream(out, stream, elements);
  if (rank == 0 && world_size == 1 && !o.compute_only)
    fmt::print(
        out,
        "# collectives: none on one rank (--ranks N, or mpirun -np N shardplan calibrate ...)\n");
  if (rank == 0) std::fflush(out);
  return rank_zero_profile(p, world);
}

}  // namespace shardplan
