// The datasheet GEMM model against cuBLAS as an H100 ran it (data/gpu_runs/: Llama 3 8B's tp=1
// layer and head GEMMs, the Ultra-Scale grid's 1B, 3B and 8B at tp 1-16, a 1.3B GPT; bf16, one GPU
// at its boost clock, nothing else running): a training run's GEMM shares the GPU with
// communication and runs at a lower sustained clock, so the model may price it slower than that
// lone measurement but not faster — where the roofline says the shape is compute-bound. Where it
// says memory-bound (attention's k = 128 GEMMs), the measured time sits above the roofline's
// max(compute, memory) (4096 x 4096 x 128: 300 TFLOP/s measured, about 360 priced): not held to it.
#include <catch2/catch.hpp>

#include "core/presets.h"
#include "core/profile.h"
#include "simulator/device_efficiency.h"

namespace shardplan {
namespace {

TEST_CASE("datasheet GEMMs: never faster than cuBLAS measured them on an H100", "[simulator]") {
  const std::string run = SHARDPLAN_SOURCE_DIR "/data/gpu_runs/";
  const std::string file = GENERATE("h100-gpt-xl-2026-11-26/profile_llama3_8b_tp1.json",
                                    "h100-gemm-shapes-2026-11-26/profile_ultrascale_1b.json",
                                    "h100-gemm-shapes-2026-11-26/profile_ultrascale_3b.json",
                                    "h100-gemm-shapes-2026-11-26/profile_ultrascale_8b.json",
                                    "h100-gemm-shapes-2026-11-26/profile_gpt_xl.json");
  CAPTURE(file);
  const Profile measured = read_profile_file(run + file);
  const Cluster c = load_cluster("dgx-h100");
  const DeviceRates rates = device_rates(c.device, Dtype::bf16);
  // Where the roofline turns: FLOPs per byte at which compute and memory take equally long.
  const double ridge = rates.matmul_flops_per_s / rates.memory_bytes_per_s;
  int compute_bound = 0;
  double model_flops = 0, model_s = 0, measured_s = 0;
  for (const GemmRate& g : measured.gemm) {
    const double flops =
        2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    const double bytes = 2.0 * static_cast<double>(g.m * g.k + g.k * g.n + g.m * g.n);
    const double model = gemm_time_s(rates, g.m, g.k, g.n, 2);
    const double lone = flops / (g.tflops * 1e12);
    INFO(g.m << " x " << g.n << " x " << g.k << ": datasheet " << flops / model / 1e12
             << " TFLOP/s, measured " << g.tflops);
    if (flops / bytes < ridge) continue;
    ++compute_bound;
    // Within the shape model's spread (gemm_shape_fit_test.cpp): one of the 383 shapes, a 1.3B
    // GPT's 256-row LM head gradient, is priced 1% faster than the lone GPU ran it.
    CHECK(model >= 0.95 * lone);
    model_flops += flops;
    model_s += model;
    measured_s += lone;
  }
  CHECK(compute_bound >= 10);  // the layer's and the head's GEMMs
  // Over their summed time the datasheet's GEMMs run at 0.72-0.80 of the lone GPU's (2026-11-26:
  // 540-580 of 721-751 TFLOP/s; 0.70 x 0.861 of peak, tiles and splits of k, 10 us a kernel).
  INFO("datasheet " << model_flops / model_s / 1e12 << " TFLOP/s, measured "
                    << model_flops / measured_s / 1e12);
  CHECK(model_s >= measured_s);
}

}  // namespace
}  // namespace shardplan
