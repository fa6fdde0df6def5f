// NCCL's cost model against measured collectives: nccl-tests all-reduce on 2-8 A100 of one DGX A100
// (vTrain's tables) and the Ultra-Scale Playbook's busbw at 256 MB on 1-64 nodes of 8 H100.
// The first also refits the physical parameters NCCL's tables do not give (collective_cost.h):
//     build/tests/test_simulator '[nccl-fit]' -s
// prints the fit, the shipped constants and the error per GPU count and size band.
#include <fmt/format.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/presets.h"
#include "simulator/collective_cost.h"

namespace shardplan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

nlohmann::json read_json(const std::string& name) {
  std::ifstream in(std::string(SHARDPLAN_SOURCE_DIR) + "/data/fidelity/" + name);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

struct Measured {
  int gpus;
  int64_t bytes;
  double time_s;
};

// vTrain's rows: in-place time, as vTrain's predictor reads them (src/predictor.py).
std::vector<Measured> vtrain_rows() {
  const nlohmann::json j = read_json("vtrain_allreduce_a100.json");
  const auto& cols = j.at("columns");
  auto column = [&](const char* name) {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return i;
    FAIL("no column " << name);
    return size_t{0};
  };
  const size_t gpus = column("gpus"), size = column("size_bytes"), time = column("time_in_place_ns");
  std::vector<Measured> rows;
  for (const auto& r : j.at("rows"))
    rows.push_back({r[gpus].get<int>(), r[size].get<int64_t>(), r[time].get<double>() * 1e-9});
  return rows;
}

// Size bands: 1-8 MiB (latency-bound), 8-64 MiB (tensor-parallel and bucketed data-parallel
// traffic), 64 MiB-1 GiB (bandwidth-bound).
constexpr std::array<const char*, 3> kBands = {"1-8 MiB", "8-64 MiB", "64 MiB-1 GiB"};
int band(int64_t bytes) {
  return bytes < 8 * kMiB ? 0 : bytes < 64 * kMiB ? 1 : 2;
}

// Absolute percentage errors summed per GPU count (2-8) and band.
struct Errors {
  double sum[9][3] = {};
  int count[9][3] = {};
  double mape(int gpus, int b) const { return sum[gpus][b] / count[gpus][b]; }
  double band_mape(int b) const {
    double s = 0;
    int n = 0;
    for (int g = 2; g <= 8; ++g) s += sum[g][b], n += count[g][b];
    return s / n;
  }
  double overall() const {
    double s = 0;
    int n = 0;
    for (int g = 2; g <= 8; ++g)
      for (int b = 0; b < 3; ++b) s += sum[g][b], n += count[g][b];
    return s / n;
  }
  // What the fit minimizes: the bands weigh alike, so the 960 rows past 64 MiB do not drown the
  // 7 latency-bound ones per GPU count.
  double objective() const { return (band_mape(0) + band_mape(1) + band_mape(2)) / 3; }
};

Errors score(const Cluster& dgx, const std::vector<Measured>& rows, const NcclPhysics& physics) {
  Errors e;
  CollectiveOptions options;
  options.physics = physics;
  for (const Measured& m : rows) {
    GroupSpan span;
    span.size = m.gpus;
    span.max_ranks_per_node = m.gpus;
    const double predicted_s =
        collective_cost(dgx, Collective::all_reduce, m.bytes, span, options).time_s;
    e.sum[m.gpus][band(m.bytes)] += std::abs(predicted_s - m.time_s) / m.time_s;
    ++e.count[m.gpus][band(m.bytes)];
  }
  return e;
}

void print(const char* title, const NcclPhysics& p, const Errors& e) {
  fmt::print("{}: scale-up efficiency {:.2f}, launch {:.0f} us\n", title, p.scale_up_efficiency,
             p.launch_us);
  fmt::print("  MAPE %      {:>9} {:>9} {:>13}\n", kBands[0], kBands[1], kBands[2]);
  for (int g = 2; g <= 8; ++g)
    fmt::print("  {} GPUs     {:9.1f} {:9.1f} {:13.1f}\n", g, 100 * e.mape(g, 0),
               100 * e.mape(g, 1), 100 * e.mape(g, 2));
  fmt::print("  all         {:9.1f} {:9.1f} {:13.1f}   overall {:.1f}\n", 100 * e.band_mape(0),
             100 * e.band_mape(1), 100 * e.band_mape(2), 100 * e.overall());
}

TEST_CASE("NCCL's model meets nccl-tests all-reduce on 2-8 A100 (vTrain)", "[collective][nccl-fit]") {
  const Cluster dgx = load_cluster("dgx-a100");
  REQUIRE(dgx.device.arch == GpuArch::ampere);
  const std::vector<Measured> rows = vtrain_rows();
  REQUIRE(rows.size() == 7168);

  // The refit: a grid over the defensible ranges, least objective.
  NcclPhysics best;
  double best_objective = INFINITY;
  for (int eff = 60; eff <= 90; ++eff)
    for (int launch = 0; launch <= 40; ++launch) {
      NcclPhysics p{.scale_up_efficiency = eff / 100.0, .launch_us = static_cast<double>(launch)};
      const double o = score(dgx, rows, p).objective();
      if (o < best_objective) best_objective = o, best = p;
    }
  const Errors shipped = score(dgx, rows, NcclPhysics{});
  print("refit", best, score(dgx, rows, best));
  print("shipped (collective_cost.h)", NcclPhysics{}, shipped);

  // The shipped constants are the refit's, to the grid's step.
  CHECK(std::abs(best.scale_up_efficiency - kNcclScaleUpEfficiency) <= 0.011);
  CHECK(std::abs(best.launch_us - kNcclLaunch_us) <= 1.01);
  // Bounds with margin over what the shipped constants give (overall 4.4%, bands 8.6 / 5.4 /
  // 4.4%, worst cell 2 GPUs at 8-64 MiB, 13.7%).
  CHECK(shipped.overall() < 0.08);
  for (int b = 0; b < 3; ++b) CHECK(shipped.band_mape(b) < 0.12);
  for (int g = 2; g <= 8; ++g)
    for (int b = 0; b < 3; ++b) CHECK(shipped.mape(g, b) < 0.25);
}

// The playbook's cluster: 8 H100 per node on NVLink4 with NVLink SHARP, 32 EFA links of 100 Gb/s
// per node (ultrascale_dev.json hardware.inter_node; EFA priced as NCCL's network transport).
Cluster ultrascale(int nodes) {
  Cluster c = load_cluster("dgx-h100", nodes);
  InterconnectLevel& net = c.levels.back();
  net.nics_per_node = 32;
  net.nic_GBps = 12.5;
  return c;
}

TEST_CASE("NCCL's model against the Ultra-Scale Playbook's busbw at 256 MB", "[collective][nccl-fit]") {
  const nlohmann::json m = read_json("ultrascale_dev.json").at("hardware").at("measured_collectives");
  const std::vector<int> nodes = m.at("nodes").get<std::vector<int>>();
  const std::array<std::pair<Collective, const char*>, 3> kinds = {
      {{Collective::all_reduce, "AllReduce"},
       {Collective::all_gather, "AllGather"},
       {Collective::reduce_scatter, "ReduceScatter"}}};
  fmt::print("Ultra-Scale busbw at 256 MB, GB/s predicted / measured (error %):\n");
  for (const auto& [c, name] : kinds) {
    fmt::print("  {:14}", name);
    const std::vector<double> measured = m.at(name).get<std::vector<double>>();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Cluster cluster = ultrascale(nodes[i]);
      GroupSpan span;
      span.size = 8 * nodes[i];
      span.nodes = nodes[i];
      span.max_ranks_per_node = 8;
      span.level = nodes[i] == 1 ? 0 : 1;
      const double busbw = collective_cost(cluster, c, 256'000'000, span).busbw_GBps;
      const double error = busbw / measured[i] - 1;
      fmt::print(" {}n {:.0f}/{:.0f} ({:+.0f})", nodes[i], busbw, measured[i], 100 * error);
      // One node (NVLink, NVLS for the all-reduce): within 35%. Across nodes the measured busbw
      // falls 1.5-10× below NCCL's model of a non-blocking fabric (EFA under load, not modelled);
      // printed, not bounded.
      if (nodes[i] == 1) CHECK(std::abs(error) < 0.35);
    }
    fmt::print("\n");
  }
}

}  // namespace
}  // namespace shardplan

namespace shardplan {
namespace {

// NCCL's pick on one DGX A100 (arch ampere, 12 channels, busBw 0.73 × 300 = 219 GB/s), worked by
// hand from the v2.20.3 tables (simulator/nccl_tuning.cpp); every call adds the 25 us launch.
TEST_CASE("NCCL's protocol pick on 8 A100 of one node", "[collective]") {
  const Cluster dgx = load_cluster("dgx-a100");
  GroupSpan eight;
  eight.size = 8;
  eight.max_ranks_per_node = 8;
  const double launch = kNcclLaunch_us * 1e-6;
  const double bus = 300e9 * kNcclScaleUpEfficiency;
  // 64 KiB: ring LL, 6.6 + 14 × 0.6 = 15 us and busBw / 4 (under llMaxBw 87.7) × 8/14 = 31.3 GB/s;
  // LL128 pays 14 + 14 × 1.9 = 40.6 us, Simple 8.4 + 14 × 3.4 = 56 us, tree LL 15.2 us at 15.9 GB/s.
  const CollectiveCost small = collective_cost(dgx, Collective::all_reduce, 64 << 10, eight);
  CHECK(small.algorithm == Algorithm::ring);
  CHECK(small.protocol == NcclProtocol::ll);
  CHECK(small.time_s == Approx(launch + 15e-6 + 65536 / (bus / 4 * 8 / 14)).epsilon(1e-9));
  // 1 GiB: ring Simple at busBw × 8/14 = 125.1 GB/s beats LL128 at 0.92 busBw.
  const int64_t gib = int64_t{1} << 30;
  const CollectiveCost large = collective_cost(dgx, Collective::all_reduce, gib, eight);
  CHECK(large.algorithm == Algorithm::ring);
  CHECK(large.protocol == NcclProtocol::simple);
  CHECK(large.time_s == Approx(launch + 56e-6 + gib / (bus * 8 / 14)).epsilon(1e-9));
  // Channels a GEMM loses to it: all 12 at 1 GiB; at 64 KiB LL sheds to 65536 / (512 · 8 · 8) = 2.
  CHECK(nccl_channels(dgx, Collective::all_reduce, gib, eight) == 12);
  CHECK(nccl_channels(dgx, Collective::all_reduce, 64 << 10, eight) == 2);
}

}  // namespace
}  // namespace shardplan
