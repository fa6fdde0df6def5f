// A calibration profile: what `shardplan calibrate` measured on a real backend (GEMM rates by
// shape, memory bandwidth, an alpha-beta fit per collective, level and group size), and how it
// overlays a cluster description (`--profile profile.json` on plan, estimate, simulate).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/collective.h"
#include "core/dtype.h"
#include "core/enum_names.h"
#include "core/memory_kernel.h"

namespace shardplan {

enum class Backend { cpu, cuda };
inline constexpr EnumNames<Backend, 2> kBackendNames{
    {{Backend::cpu, "cpu"}, {Backend::cuda, "cuda"}}};

// The achieved rate of one GEMM C[m×n] = A[m×k]·B[k×n] (2·m·n·k FLOPs), one rank per device with
// every rank running at once, as training runs them.
struct GemmRate {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  double tflops = 0;  // achieved, 10^12 FLOP/s

  bool operator==(const GemmRate&) const = default;
};

// The achieved rate of one memory-bound kernel (core/memory_kernel.h says what its elements are),
// one rank per device with every rank running at once. Kernels a backend runs as scalar loops
// (GELU's tanh, softmax's exponentials, Adam's square roots on a CPU core) are bound by their
// arithmetic rather than by memory bandwidth, which is why each is measured on its own; and at the
// sizes a model's layers use, since a size that leaves the caches runs slower.
struct KernelRate {
  MemoryKernel kernel = MemoryKernel::norm_forward;
  double elements = 0;  // per call, the size it was measured at
  double elements_per_s = 0;

  bool operator==(const KernelRate&) const = default;
};

// One measured size of a collective's sweep: nccl-tests' size and time.
struct CollectivePoint {
  int64_t bytes = 0;
  double time_us = 0;

  bool operator==(const CollectivePoint&) const = default;
};

// Hockney's model of one collective (R. W. Hockney, "The communication challenge for MPP: Intel
// Paragon and Meiko CS-2", Parallel Computing 20(3), 1994: t = t0 + n / r_inf):
//   alpha_us·1e-6 + bytes / (algbw_GBps·1e9)
// with `bytes` nccl-tests' size (one rank's full buffer, as simulator/collective_cost.h prices it).
// alpha is the latency; beta = 1 / algbw_GBps the time per byte; busbw follows with
// bus_bandwidth_factor (core/collective.h). The sweep it was fitted to is kept beside it: a library
// switches algorithm and protocol with the size (Open MPI's tuned decisions, NCCL's LL/LL128/Simple
// protocols), so one line can be off by several times at some sizes; time_s follows the measured
// points wherever they reach.
struct CollectiveFit {
  Collective collective = Collective::all_reduce;
  size_t level = 0;       // the interconnect level the group spans (index into Cluster::levels)
  int ranks = 2;          // group size
  double alpha_us = 0;    // latency
  double algbw_GBps = 0;  // 1 / beta: the algbw the collective tends to at large sizes
  std::vector<CollectivePoint> measured;  // ascending sizes; may be empty
  // Timed on inputs no cache holds, last written long before the call, as a ZeRO parameter
  // gather's shards and a several-layer gradient bucket are (reads_cold_input, core/schedule.h);
  // otherwise on inputs written just before it, as a step's activations are.
  bool cold_input = false;

  // Between two measured sizes, the line through them (a Hockney model per segment); below the
  // smallest, its time; above the largest, its time plus the rest at algbw. Without measured
  // points, the fit.
  double time_s(int64_t bytes) const;
  bool operator==(const CollectiveFit&) const = default;
};

struct Profile {
  Backend backend = Backend::cpu;
  std::string device;               // what was measured: "AMD EPYC core", "NVIDIA H100 80GB HBM3"
  int ranks = 1;                    // ranks the calibration ran on
  Dtype dtype = Dtype::fp32;        // the GEMMs' compute dtype
  double memory_GBps = 0;           // per device, every device streaming at once (STREAM triad)
  std::vector<GemmRate> gemm;       // at least one
  std::vector<KernelRate> kernels;  // those measured; the others run at memory_GBps
  std::vector<CollectiveFit> collectives;  // none when it ran on one rank
  // What the machine's noise adds to work priced from these rates, as a share of it: each rate is
  // a median over samples (of 10 ms on the cpu backend), which leaves out the rarer interruptions
  // a whole training step meets, so that a step's median, which sums its parts' means, runs longer
  // than the sum of their medians. Fixed work quanta as long as those samples on every rank at
  // once (FWQ; Sottile & Minnich 2004): the mean over the quanta of the slowest rank's time over
  // their median, less 1 — what a step that waits for its slowest rank pays (Hoefler, Schneider &
  // Lumsdaine 2010). 0: not measured; below 0 where the quanta's median sits above their mean.
  double noise = 0;

  bool operator==(const Profile&) const = default;
};

// Keys: backend, device, ranks, dtype, memory_GBps, noise (optional, 0), gemm [{m, n, k, tflops}],
// kernels (optional)
// [{kernel, elements, elements_per_s}], collectives [{collective, level, ranks, cold_input
// (optional, false), alpha_us, algbw_GBps, measured (optional) [{bytes, time_us}]}]; "source" is
// documentation. Unknown keys are rejected; validated before returning.
Profile profile_from_json(const nlohmann::json& j, const std::string& file);
nlohmann::json profile_to_json(const Profile& p);  // reads back to an equal Profile

// `base` with its compute rates — every GEMM shape's, every kernel size's, memory_GBps and noise —
// the median over `base` and the compute passes taken after it that measured them (calibrate
// --compute-only, over some of base's shapes), so that rates drawn over the whole time the runs
// took price them (Abedi & Brecht, "Conducting repeatable experiments in highly variable cloud
// computing environments", ICPE 2017: alternatives interleaved, here the calibration with the
// runs). The collectives stay base's. A pass of another backend, ranks or dtype is an InputError
// naming its file in `files` (one per pass).
Profile merge_compute_passes(const Profile& base, const std::vector<Profile>& passes,
                             const std::vector<std::string>& files);

// The profile in a file, as `--profile profile.json` names it.
Profile read_profile_file(const std::string& path);

// Positive sizes and rates, at least one GEMM rate, no shape, no (kernel, elements) and no
// (collective, level, ranks, cold_input) given twice, group sizes of at least 2, measured
// collective sizes ascending.
void validate_profile(const Profile& p, const std::string& file);

// The cluster with what the profile measured in place of the description's figures:
// device.memory_GBps, and for each level the profile has a send_recv fit for (the smallest group
// there), latency_us = alpha_us and the per-device rate = algbw_GBps (bandwidth_GBps on scale-up
// levels, nic_GBps on scale-out ones: one pair of ranks drives one NIC). Peak FLOP/s stay the
// datasheet's, so MFU keeps its meaning; achieved GEMM rates are looked up with gemm_rate_flops and
// whole collectives with find_collective_fit. A fit for a level the cluster lacks is an InputError
// naming `file`.
Cluster apply_profile(Cluster c, const Profile& p, const std::string& file);

// Achieved FLOP/s of an m×n×k GEMM, interpolated over the measured shapes by inverse distance
// weighting (D. Shepard, "A two-dimensional interpolation function for irregularly-spaced data",
// ACM national conference 1968, with Shepard's exponent 2) in (log2 m, log2 n, log2 k): a measured
// shape returns its own rate; any other shape the weighted mean of the nearest 8 measured shapes
// (the corners of the cell a trilinear interpolation would use) with weights 1 / distance². The
// result never leaves the range of the measured rates. m and n are interchangeable: C = A·B and
// Cᵀ = Bᵀ·Aᵀ are the same work (a row-major library computes one as the other), so a measured
// m×n×k also stands for n×m×k, at the distance of whichever orientation is nearer.
double gemm_rate_flops(const Profile& p, int64_t m, int64_t n, int64_t k);

// The rate of `kernel` over `elements` per call: interpolated linearly in log2(elements) between
// the nearest measured sizes of that kernel, the nearest one's outside them; 0 when the kernel was
// not measured.
double kernel_rate_per_s(const Profile& p, MemoryKernel kernel, double elements);

// The fit for exactly this collective, level, group size and input; nullptr when it was not
// measured.
const CollectiveFit* find_collective_fit(const Profile& p, Collective c, size_t level, int ranks,
                                         bool cold_input);

}  // namespace shardplan
