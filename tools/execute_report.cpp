#include "tools/execute_report.h"

#include <mpi.h>

#include <algorithm>
#include <cassert>
#include <string>

#include "executor/runtime/world_comm.h"
#include "simulator/trace.h"

namespace shardplan::cli {

std::vector<std::vector<ActionTiming>> gather_timings(const std::vector<ActionTiming>& mine) {
  static_assert(sizeof(ActionTiming) == 2 * sizeof(double));
  const bool root = world_rank() == 0;
  const int n = world_size();
  const int count = static_cast<int>(2 * mine.size());
  std::vector<int> counts(root ? static_cast<size_t>(n) : 0), offsets(counts.size());
  const WaitScope wait(world_wait(WaitKind::gather));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<double> all(root ? static_cast<size_t>(offsets.back() + counts.back()) : 0);
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
              0, MPI_COMM_WORLD);
  std::vector<std::vector<ActionTiming>> by_rank(counts.size());
  for (size_t r = 0; r < counts.size(); ++r)
    for (int i = 0; i < counts[r]; i += 2) {
      const size_t at = static_cast<size_t>(offsets[r] + i);
      by_rank[r].push_back({all[at], all[at + 1]});
    }
  return by_rank;
}

void gather_gemms(const MatmulStats& mine, std::vector<MeasuredGemms>& record) {
  const double sent[2] = {mine.flops, mine.seconds};
  std::vector<double> all(world_rank() == 0 ? 2 * static_cast<size_t>(world_size()) : 0);
  const WaitScope wait(world_wait(WaitKind::gather));
  MPI_Gather(sent, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (all.empty()) return;
  record.resize(all.size() / 2);
  for (size_t r = 0; r < record.size(); ++r) {
    record[r].flops_per_step = all[2 * r];
    record[r].seconds.push_back(all[2 * r + 1]);
  }
}

std::vector<MeasuredMemory> gather_memory(const TensorAllocator& alloc) {
  static_assert(sizeof(MeasuredMemory) == 6 * sizeof(int64_t));
  const MemoryBytes& m = alloc.at_peak();
  const MeasuredMemory mine{m[MemoryCategory::parameters], m[MemoryCategory::gradients],
                            m[MemoryCategory::optimizer],  m[MemoryCategory::activations],
                            m[MemoryCategory::buffers],    alloc.peak_bytes()};
  std::vector<MeasuredMemory> all(world_rank() == 0 ? static_cast<size_t>(world_size()) : 0);
  const WaitScope wait(world_wait(WaitKind::gather));
  MPI_Gather(&mine, 6, MPI_INT64_T, all.data(), 6, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return all;
}

nlohmann::json measured_trace(const Measurement& m) {
  assert(!m.timings.empty());
  return chrome_trace(m.programs, m.timings.back());
}

}  // namespace shardplan::cli
