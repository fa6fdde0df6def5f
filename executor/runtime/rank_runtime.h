// What one rank's program runs on: its device's kernels, memory (an allocator over it) and
// streams, its parallel groups' collectives and its pipeline sends and receives. The MPI runtime
// (host memory, CpuKernels, MPI collectives, one thread in program order) and the CUDA runtime
// (GPU memory, CudaKernels, NCCL, CUDA streams and events) provide the same parts, so the
// interpreter (interpreter.h) and the layers are written once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/schedule.h"
#include "executor/kernels.h"
#include "executor/runtime/group_comm.h"
#include "executor/runtime/pipeline_p2p.h"
#include "executor/runtime/step_streams.h"
#include "executor/state/tensor_allocator.h"

namespace shardplan {

class RankRuntime {
 public:
  virtual ~RankRuntime() = default;
  // The device's kernels for storage type T (float, or bf16 under mixed precision).
  template <class T>
  Kernels<T>& kernels() {
    if constexpr (std::is_same_v<T, float>)
      return f32_kernels();
    else
      return bf16_kernels();
  }
  virtual Kernels<float>& f32_kernels() = 0;
  virtual Kernels<bf16>& bf16_kernels() = 0;
  virtual TensorAllocator& allocator() = 0;
  virtual StepStreams& streams() = 0;
  // The rank's group of kind `g` (group rank = position in Program::groups[g]).
  virtual GroupComm& group(Group g) = 0;
  // The tied embedding's group (first and last pipeline stage), null on the other ranks.
  virtual GroupComm* embedding_group() = 0;
  virtual PipelineP2p& p2p() = 0;
  // Frees `b` once the work issued so far on the selected stream no longer needs it: at once in
  // program order; on a GPU when that stream has passed this point.
  template <class T>
  void release_after_use(Buffer<T> b) {
    release_bytes_after_use(std::move(b).into_bytes());
  }
  virtual void release_bytes_after_use(Buffer<std::byte> b) = 0;
  // Frees what release_after_use kept whose work has finished; with `wait`, all of it.
  virtual void finish_releases(bool wait) = 0;
};

// A buffer for an action on the selected stream when that is a communication stream, zero-filled,
// or not filled `for_overwrite` (a collective's or a receive's output: TensorAllocator::
// allocate_for_overwrite). Its block may have served the compute stream a moment ago (and a fill
// runs there: the memory source fills on the compute stream), so the selected stream waits for the
// compute stream first; release it with rt.release_after_use.
template <class T = float>
Buffer<T> side_buffer(RankRuntime& rt, MemoryCategory category, int64_t count, const char* what,
                      bool for_overwrite = false) {
  TensorAllocator& alloc = rt.allocator();
  Buffer<T> b = for_overwrite ? alloc.allocate_for_overwrite<T>(category, count, what)
                              : alloc.allocate<T>(category, count, what);
  StepStreams& streams = rt.streams();
  const Stream s = streams.selected();
  if (s != Stream::compute) {
    streams.select(Stream::compute);
    const Stamp now = streams.stamp();
    streams.select(s);
    streams.wait(now);
  }
  return b;
}

// The CPU backend's runtime for `p`'s rank. Collective over MPI_COMM_WORLD (every rank builds its
// groups at the same time).
std::unique_ptr<RankRuntime> mpi_runtime(const Program& p);

}  // namespace shardplan
