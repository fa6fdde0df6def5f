// The calibration profile: JSON round trip, strict reading, the cluster overlay, and the GEMM-rate
// and collective-fit lookups, against numbers computed by hand.
#include "core/profile.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "core/json_reader.h"

namespace shardplan {
namespace {

using nlohmann::json;

Profile sample_profile() {
  Profile p;
  p.backend = Backend::cpu;
  p.device = "AMD EPYC core";
  p.ranks = 4;
  p.dtype = Dtype::fp32;
  p.memory_GBps = 30.5;
  p.noise = 0.02;
  p.gemm = {{64, 64, 64, 1.0}, {256, 256, 256, 2.0}};
  p.kernels = {{MemoryKernel::gelu_forward, 1024, 1e8},
               {MemoryKernel::gelu_forward, 4096, 2e8},
               {MemoryKernel::optimizer_step, 1e6, 5e7}};
  p.collectives = {{Collective::all_reduce, 0, 2, 3.5, 4.25, {{8, 4.0}, {1024, 6.0}, {4096, 30.0}}},
                   {Collective::send_recv, 0, 4, 1.0, 9.0, {}},
                   {Collective::send_recv, 0, 2, 0.5, 6.0, {}},
                   {Collective::send_recv, 1, 2, 4.0, 12.0, {}},
                   {Collective::all_reduce, 0, 2, 5.0, 3.0, {}, true}};
  return p;
}

InputError read_error(const json& j) {
  try {
    profile_from_json(j, "profile.json");
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError reading " << j.dump());
  throw;  // not reached: FAIL throws
}

TEST_CASE("profile: JSON round trip", "[profile]") {
  const Profile p = sample_profile();
  json j = profile_to_json(p);
  CHECK(j["collectives"][0]["collective"] == "all_reduce");
  CHECK(profile_from_json(j, "profile.json") == p);
  j["source"] = "shardplan calibrate --backend cpu --ranks 4";  // documentation only
  CHECK(profile_from_json(j, "profile.json") == p);
  j.erase("collectives");  // one rank measures no collective
  j["ranks"] = 1;
  CHECK(profile_from_json(j, "profile.json").collectives.empty());
  j.erase("noise");  // a profile from before the noise was priced: none
  CHECK(profile_from_json(j, "profile.json").noise == 0);
}

TEST_CASE("profile: written atomically and read back from a file", "[profile]") {
  const std::string path = "profile_test_roundtrip.json";  // in the test's working folder
  write_json_file(path, profile_to_json(sample_profile()));
  CHECK(read_profile_file(path) == sample_profile());
  std::remove(path.c_str());
}

TEST_CASE("profile: unknown keys and bad values are errors naming the field", "[profile]") {
  const json good = profile_to_json(sample_profile());
  json j = good;
  j["memory_GBs"] = 30;
  CHECK(read_error(j).field == "memory_GBs");
  j = good;
  j["gemm"][1]["flops"] = 1e12;
  CHECK(read_error(j).field == "gemm[1].flops");
  j = good;
  j["collectives"][0]["beta"] = 1;
  CHECK(read_error(j).field == "collectives[0].beta");
  j = good;
  j["collectives"][0]["collective"] = "allreduce";
  const InputError name = read_error(j);
  CHECK(name.field == "collectives[0].collective");
  CHECK_THAT(name.hint, Catch::Contains("all_reduce | reduce_scatter"));
  j = good;
  j["gemm"][1] = j["gemm"][0];
  CHECK(read_error(j).field == "gemm[1]");
  j = good;
  j["collectives"][1]["ranks"] = 8;  // more than the 4 ranks measured
  CHECK(read_error(j).field == "collectives[1].ranks");
  j = good;
  j["gemm"] = json::array();
  CHECK(read_error(j).field == "gemm");
  j = good;
  j["kernels"][1]["elements"] = 1024;  // gelu_forward over 1024 elements twice
  CHECK(read_error(j).field == "kernels[1]");
  j = good;
  j["kernels"][0]["kernel"] = "gelu";
  CHECK(read_error(j).field == "kernels[0].kernel");
  j = good;
  j["collectives"][0]["measured"][2]["bytes"] = 512;  // not ascending
  CHECK(read_error(j).field == "collectives[0].measured[2].bytes");
  j = good;
  j["collectives"][4]["cold_input"] = false;  // all_reduce on level 0 over 2 ranks twice
  const InputError twice = read_error(j);
  CHECK(twice.field == "collectives[4]");
  CHECK_THAT(twice.reason, Catch::Contains("all_reduce on level 0 over 2 ranks given twice"));
  j = good;
  j["collectives"][4].erase("cold_input");  // optional: false
  CHECK(read_error(j).field == "collectives[4]");
  j = good;
  j["collectives"][4]["cold_input"] = "yes";
  CHECK(read_error(j).field == "collectives[4].cold_input");
  j = good;
  j["noise"] = 1.0;  // a step twice as long as its medians: not noise
  CHECK(read_error(j).field == "noise");
  j = good;
  j["backend"] = "rocm";
  CHECK(read_error(j).field == "backend");
}

TEST_CASE("profile: a collective fit prices a size as alpha + bytes / algbw", "[profile]") {
  const CollectiveFit f{Collective::all_reduce, 0, 2, 2.0, 4.0, {}};
  CHECK(f.time_s(8'000'000) == Approx(2e-6 + 8e6 / 4e9).epsilon(1e-12));
  const Profile p = sample_profile();
  CHECK(find_collective_fit(p, Collective::send_recv, 0, 4, false) == &p.collectives[1]);
  CHECK(find_collective_fit(p, Collective::send_recv, 1, 4, false) == nullptr);
  CHECK(find_collective_fit(p, Collective::all_gather, 0, 2, false) == nullptr);
  // Warm and cold input are two fits of one collective, level and group size.
  CHECK(find_collective_fit(p, Collective::all_reduce, 0, 2, false) == &p.collectives[0]);
  CHECK(find_collective_fit(p, Collective::all_reduce, 0, 2, true) == &p.collectives[4]);
  CHECK(find_collective_fit(p, Collective::send_recv, 0, 4, true) == nullptr);
}

TEST_CASE("profile: a collective follows its measured sizes, the fit past them", "[profile]") {
  const Profile p = sample_profile();
  const CollectiveFit& f = p.collectives[0];  // 8 B 4 us, 1 KiB 6 us, 4 KiB 30 us
  CHECK(f.time_s(1024) == Approx(6e-6).epsilon(1e-12));
  CHECK(f.time_s(2560) == Approx(18e-6).epsilon(1e-12));  // halfway from 1 KiB to 4 KiB
  CHECK(f.time_s(1) == Approx(4e-6).epsilon(1e-12));      // below the sweep: its smallest
  // Past the sweep: its largest plus the rest at algbw (4.25 GB/s).
  CHECK(f.time_s(4096 + 4'250'000) == Approx(30e-6 + 1e-3).epsilon(1e-12));
}

TEST_CASE("profile: compute passes merge as each rate's median, the collectives kept",
          "[profile]") {
  const Profile base = sample_profile();
  Profile fast = base, slow = base;
  fast.gemm = {{256, 256, 256, 4.0}, {64, 64, 64, 3.0}};  // another order
  slow.gemm = {{64, 64, 64, 0.5}, {256, 256, 256, 1.0}};
  fast.memory_GBps = 40, slow.memory_GBps = 10;
  fast.noise = 0.01, slow.noise = 0.5;
  for (KernelRate& k : fast.kernels) k.elements_per_s *= 2;
  for (KernelRate& k : slow.kernels) k.elements_per_s /= 2;
  fast.collectives.clear(), slow.collectives.clear();
  Profile merged = merge_compute_passes(base, {fast, slow, fast}, {"a.json", "b.json", "c.json"});
  CHECK(merged.gemm[0].tflops == 2.0);  // 64³: median of 1, 3, 0.5, 3
  CHECK(merged.gemm[1].tflops == 3.0);  // 256³: median of 2, 4, 1, 4
  CHECK(merged.memory_GBps == Approx((30.5 + 40) / 2));
  CHECK(merged.noise == Approx((0.02 + 0.01) / 2));  // median of 0.02, 0.01, 0.5, 0.01
  CHECK(merged.kernels[0].elements_per_s == Approx(1.5e8));
  CHECK(merged.collectives == base.collectives);
  CHECK(merge_compute_passes(base, {}, {}) == base);

  // A pass that timed some shapes only: the others' median over the passes that did.
  slow.gemm.pop_back();
  merged = merge_compute_passes(base, {fast, slow}, {"a.json", "b.json"});
  CHECK(merged.gemm[0].tflops == 1.0);  // 64³: median of 1, 3, 0.5
  CHECK(merged.gemm[1].tflops == 3.0);  // 256³: median of 2, 4
  fast.ranks = 2;
  try {
    merge_compute_passes(base, {fast}, {"a.json"});
    FAIL("a pass on other ranks must be an error");
  } catch (const InputError& e) {
    CHECK(e.file == "a.json");
  }
}

TEST_CASE("profile: kernel rates interpolate in log2 of the size, clamped outside", "[profile]") {
  const Profile p = sample_profile();  // gelu_forward: 1 K at 1e8/s, 4 K at 2e8/s
  CHECK(kernel_rate_per_s(p, MemoryKernel::gelu_forward, 1024) == 1e8);
  CHECK(kernel_rate_per_s(p, MemoryKernel::gelu_forward, 2048) == Approx(1.5e8).epsilon(1e-12));
  CHECK(kernel_rate_per_s(p, MemoryKernel::gelu_forward, 64) == 1e8);
  CHECK(kernel_rate_per_s(p, MemoryKernel::gelu_forward, 1 << 20) == 2e8);
  CHECK(kernel_rate_per_s(p, MemoryKernel::optimizer_step, 3) == 5e7);
  CHECK(kernel_rate_per_s(p, MemoryKernel::softmax_forward, 1024) == 0);  // not measured
}

TEST_CASE("profile: a GEMM shape stands for its transpose", "[profile]") {
  Profile p = sample_profile();
  p.gemm = {{256, 64, 128, 3.0}, {4096, 4096, 4096, 1.0}};
  CHECK(gemm_rate_flops(p, 64, 256, 128) == 3e12);  // Cᵀ = Bᵀ·Aᵀ: the same work
  CHECK(gemm_rate_flops(p, 128, 64, 256) != 3e12);  // k is not interchangeable
}

TEST_CASE("profile: GEMM rate is exact on measured shapes and inverse-distance between",
          "[profile]") {
  const Profile p = sample_profile();  // 64³ at 1 TFLOP/s, 256³ at 2 TFLOP/s
  CHECK(gemm_rate_flops(p, 64, 64, 64) == 1e12);
  CHECK(gemm_rate_flops(p, 256, 256, 256) == 2e12);
  // 128³ is log2-distance √3 from both: the plain mean.
  CHECK(gemm_rate_flops(p, 128, 128, 128) == Approx(1.5e12).epsilon(1e-12));
  // 64×64×128: squared distances 1 and 2²+2²+1² = 9, weights 1 and 1/9: (1 + 2/9) / (10/9) = 1.1.
  CHECK(gemm_rate_flops(p, 64, 64, 128) == Approx(1.1e12).epsilon(1e-12));
  // Far outside the table: still within the measured range.
  const double far = gemm_rate_flops(p, 8192, 8192, 8192);
  CHECK(far > 1e12);
  CHECK(far < 2e12);
}

TEST_CASE("profile: GEMM interpolation weighs only the 8 nearest shapes", "[profile]") {
  Profile p = sample_profile();
  // Around 128³: six shapes at squared log2-distance 1 and two at 2 (rate 1), and a ninth at 4
  // (rate 10) which would pull the mean to 9.5 / 7.25 = 1.31 if it counted.
  p.gemm.clear();
  for (int64_t m : {64, 256}) p.gemm.push_back({m, 128, 128, 1.0});
  for (int64_t n : {64, 256}) p.gemm.push_back({128, n, 128, 1.0});
  for (int64_t k : {64, 256}) p.gemm.push_back({128, 128, k, 1.0});
  p.gemm.push_back({64, 64, 128, 1.0});     // distance² 2
  p.gemm.push_back({256, 256, 128, 1.0});   // distance² 2
  p.gemm.push_back({512, 128, 128, 10.0});  // distance² 4: the ninth, left out
  CHECK(gemm_rate_flops(p, 128, 128, 128) == Approx(1e12).epsilon(1e-12));
}

TEST_CASE("profile: overlay on a cluster", "[profile]") {
  Cluster c;
  c.name = "two-level";
  c.nodes = 2;
  c.devices_per_node = 8;
  c.device.memory_GBps = 3350;
  c.device.peak_tflops_fp32 = 67;
  c.levels = {{"nvlink", LinkKind::nvlink, 8, 450, 0, 0, 0.5, 1},
              {"infiniband", LinkKind::infiniband, 0, 0, 8, 50, 2.0, 1}};
  const Cluster o = apply_profile(c, sample_profile(), "profile.json");
  CHECK(o.device.memory_GBps == 30.5);
  CHECK(o.device.peak_tflops_fp32 == 67);  // the datasheet's, for MFU
  CHECK(o.levels[0].latency_us == 0.5);    // the 2-rank send_recv, not the 4-rank one
  CHECK(o.levels[0].bandwidth_GBps == 6.0);
  CHECK(o.levels[1].latency_us == 4.0);
  CHECK(o.levels[1].nic_GBps == 12.0);
  CHECK(o.levels[1].bandwidth_GBps == 0);
  CHECK(o.levels[1].nics_per_node == 8);

  c.levels.pop_back();
  try {
    apply_profile(c, sample_profile(), "profile.json");
    FAIL("a fit for a level the cluster lacks must be an error");
  } catch (const InputError& e) {
    CHECK(e.field == "collectives[3].level");
    CHECK_THAT(e.reason, Catch::Contains("has 1 interconnect levels"));
  }
}

}  // namespace
}  // namespace shardplan
