#include "executor/calibrate_cpu.h"

#include <fmt/format.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "executor/calibrate_gemm.h"
#include "executor/calibrate_kernels.h"
#include "executor/calibrate_memory.h"
#include "executor/param_layout.h"

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

// 0 when every rank of `group` shares one node's memory (MPI's shared-memory split), else 1: the
// CPU backend knows a node and the network across nodes.
size_t group_level(MPI_Comm group) {
  MPI_Comm node;
  MPI_Comm_split_type(group, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0, group_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_size(group, &group_size);
  MPI_Comm_free(&node);
  int one_node = node_size == group_size ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &one_node, 1, MPI_INT, MPI_MIN, group);
  return one_node ? 0 : 1;
}

// One tp rank's share of a model's layer on one micro-batch size.
struct LayerShare {
  const Model& model;
  int tp = 1;
  LayerDims dims;
  int64_t vocab_rows = 0;  // of the LM head
  std::string label;
};

std::vector<LayerShare> layer_shares(const CalibrateOptions& o) {
  std::vector<LayerShare> shares;
  for (const Model& m : o.models)
    for (int tp : o.tp)
      for (int64_t mbs : o.micro_batches) {
        const RankShard shard{tp, 0, {}, true, true};
        const int64_t seq = o.seq > 0 ? o.seq : m.max_seq;
        shares.push_back({m, tp, layer_dims(m, shard, mbs, seq, false),
                          split_range(m.vocab, tp, 0).count(),
                          fmt::format("{} tp={} mbs={}", m.name, tp, mbs)});
      }
  return shares;
}

std::vector<GemmCall> model_gemm_calls(const std::vector<LayerShare>& shares) {
  std::vector<GemmCall> calls;
  for (const LayerShare& s : shares)
    add_distinct(calls, layer_gemm_calls(s.dims, s.vocab_rows, s.label));
  return calls;
}

std::vector<KernelTiming> model_kernel_timings(const std::vector<LayerShare>& shares,
                                               const TimingOptions& t, MPI_Comm world) {
  std::vector<KernelTiming> timings;
  for (const LayerShare& s : shares) {
    const int64_t parameters = count_parameters(s.model).total() / s.tp;
    for (KernelTiming& k : time_kernels(s.dims, s.vocab_rows, parameters, s.label, t, world))
      timings.push_back(std::move(k));
  }
  return timings;
}

// Every collective on groups of each size (consecutive ranks, as tp groups are; every group at
// once; ranks left over when the size does not divide the world sit out). Complete on rank 0 only.
std::vector<CollectiveFit> measure_collectives(const CalibrateOptions& o, MPI_Comm world,
                                               std::FILE* out) {
  int rank = 0, world_size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &world_size);
  std::vector<CollectiveFit> fits;
  for (int n : calibration_group_sizes(world_size)) {
    const int groups = world_size / n;
    MPI_Comm group;
    MPI_Comm_split(world, rank / n < groups ? rank / n : MPI_UNDEFINED, rank, &group);
    if (group != MPI_COMM_NULL) {
      const size_t level = group_level(group);
      for (const CollectiveBench* b : collective_benches()) {
        const CollectiveSweep s = sweep_collective(*b, o.sweep, group, level);
        if (rank == 0) print_sweep(out, s, groups);
        fits.push_back(s.fit);
      }
      MPI_Comm_free(&group);
    }
    MPI_Barrier(world);
  }
  return fits;  // rank 0's: it is in every first group
}

}  // namespace

void validate_calibrate_options(const CalibrateOptions& o, int world) {
  for (const Model& m : o.models)
    for (int tp : o.tp)
      if (tp < 1 || m.num_heads % tp != 0 || m.num_kv_heads % tp != 0)
        throw InputError(
            "--tp", "",
            fmt::format("{} does not divide {}'s num_attention_heads={} and num_key_value_heads={}",
                        tp, m.name, m.num_heads, m.num_kv_heads));
  for (int n : calibration_group_sizes(world))
    for (const CollectiveBench* b : collective_benches())
      if (sweep_counts(*b, o.sweep, n).size() < 2)
        throw InputError(
            "--max-bytes", "",
            fmt::format("{} B leaves {} on {} ranks fewer than two sizes to fit alpha and beta",
                        o.sweep.max_bytes, enum_name(b->collective, kCollectiveNames), n),
            "leave --max-bytes out: it follows the models' gradient size");
}

int64_t sweep_max_bytes(const std::vector<Model>& models) {
  int64_t bytes = int64_t{4} << 20;
  for (const Model& m : models)
    while (bytes < count_parameters(m).total() * dtype_bytes(Dtype::fp32)) bytes *= 2;
  return bytes;
}

std::vector<int> calibration_group_sizes(int world) {
  std::vector<int> sizes;
  for (int n = 2; n <= world; n *= 2) sizes.push_back(n);
  if (world > 1 && (sizes.empty() || sizes.back() != world)) sizes.push_back(world);
  return sizes;
}

Profile calibrate_cpu(const CalibrateOptions& o, MPI_Comm world, std::FILE* out) {
  int rank = 0, world_size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &world_size);
  validate_calibrate_options(o, world_size);
  Profile p;
  p.backend = Backend::cpu;
  p.device = cpu_model_name();
  p.ranks = world_size;
  p.dtype = Dtype::fp32;
  if (rank == 0)
    fmt::print(out, "# shardplan calibrate: {} rank{} of {}, fp32\n\n", world_size,
               world_size == 1 ? "" : "s", p.device);

  const std::vector<LayerShare> shares = layer_shares(o);
  const auto gemm = time_gemm_calls(model_gemm_calls(shares), o.timing, world);
  if (rank == 0) print_gemm_timings(out, gemm);
  p.gemm = gemm_rates(gemm);

  const auto kernels = model_kernel_timings(shares, o.timing, world);
  if (rank == 0) print_kernel_timings(out, kernels);
  p.kernels = kernel_rates(kernels);

  const int64_t elements = o.stream_elements > 0 ? o.stream_elements : stream_elements();
  const auto stream = measure_stream(elements, o.timing, world);
  if (rank == 0) print_stream(out, stream, elements);
  p.memory_GBps = triad_GBps(stream);

  p.collectives = measure_collectives(o, world, out);
  if (rank == 0 && world_size == 1)
    fmt::print(
        out,
        "# collectives: none on one rank (--ranks N, or mpirun -np N shardplan calibrate ...)\n");
  if (rank == 0) std::fflush(out);
  // Every rank returns rank 0's profile, which alone saw every group's sweep.
  std::string text = rank == 0 ? profile_to_json(p).dump() : std::string();
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, world);
  text.resize(static_cast<size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, 0, world);
  return profile_from_json(nlohmann::json::parse(text), "calibration");
}

}  // namespace shardplan
