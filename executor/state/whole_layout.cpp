#include "executor/state/whole_layout.h"

#include <mpi.h>

#include <cassert>

#include "executor/runtime/world_comm.h"

namespace shardplan {

std::vector<float> to_whole_layout(const Model& m, const ParamLayout& layout, const RankCoord& c,
                                   const std::vector<float>& flat) {
  const ParamLayout whole = param_layout(m, whole_model(m));
  std::vector<float> full(static_cast<size_t>(whole.total), 0.0f);
  if (c.dp == 0 && c.cp == 0)
    for (const ParamTensor& x : layout.tensors) {
      if (!whole.has(x.name) || (x.split == TensorSplit::replicated && c.tp != 0)) continue;
      const int64_t base = whole.get(x.name).offset;
      for (int64_t i = 0; i < x.count(); ++i)
        full[static_cast<size_t>(base + full_index(x, i))] =
            flat[static_cast<size_t>(x.offset + i)];
    }
  const bool root = world_rank() == 0;
  const WaitScope wait(world_wait(WaitKind::reduce));
  MPI_Reduce(root ? MPI_IN_PLACE : full.data(), full.data(), static_cast<int>(full.size()),
             MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (!root) full.clear();
  return full;
}

void from_whole_layout(const Model& m, const ParamLayout& layout, const std::vector<float>& whole,
                       float* flat) {
  const ParamLayout w = param_layout(m, whole_model(m));
  std::vector<float> full(static_cast<size_t>(w.total));
  if (world_rank() == 0) {
    assert(whole.size() == full.size());
    full = whole;
  }
  const WaitScope wait(world_wait(WaitKind::broadcast));
  MPI_Bcast(full.data(), static_cast<int>(full.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  for (const ParamTensor& x : layout.tensors) {
    const int64_t base = w.get(w.has(x.name) ? x.name : x.init_name).offset;
    for (int64_t i = 0; i < x.count(); ++i)
      flat[x.offset + i] = full[static_cast<size_t>(base + full_index(x, i))];
  }
}

}  // namespace shardplan
