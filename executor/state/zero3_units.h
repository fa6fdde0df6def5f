// ZeRO-3's full-size buffers on one rank, held as PyTorch FSDP holds them (Zhao et al. 2023,
// §3.3–3.4): a unit's parameters all-gathered from the shards before each use (forward, backward
// with a full recompute's re-forward) and freed when that use ends (reshard after forward and
// after backward), and the unit's gradients from its backward until they are reduce-scattered into
// the rank's gradient shard. A unit is a layer, the embedding or the head — with the word
// embedding it borrows when the embeddings are tied and pp = 1 (a unit of its own in the shards:
// zero_shards.h). Both are charged as buffers, each unit padded to a multiple of the members as
// FSDP's unsharded FlatParameter is; no full flat copy of the parameters or gradients exists.
// Every buffer and collective goes through the rank's runtime (rank_runtime.h), so the CPU and
// CUDA backends hold the same.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/schedule.h"
#include "executor/runtime/rank_runtime.h"
#include "executor/runtime/step_streams.h"
#include "executor/state/flat_view.h"
#include "executor/state/zero_shards.h"

namespace shardplan {

// The param_gather the unit pass at actions [first, last) of `p` waits for (a dependency of its
// first compute); none where the zero group has one member and the program gathers nothing.
std::optional<uint32_t> unit_gather(const Program& p, size_t first, size_t last);
// The last compute of that pass: the action its grad_reduce depends on.
uint32_t last_compute(const Program& p, size_t first, size_t last);

// FSDP's prefetch (Zhao et al. 2023 §4.2): a gather is issued as soon as the actions it depends on
// have been, not at its place in program order. The schedule makes a unit's gather wait for the
// use two units back (FSDP's rate limit of two gathered units), so before the pass at `next` the
// gather of the unit after it is ready, and the two are gathered together as FSDP holds them.
// Returns the first gather not yet issued (`starts`: a start stamp once issued; every action
// before `next` has been) if all its dependencies have been. Gathers keep their order (one
// stream), and every member of the group issues the same gather ahead at the same point (their
// programs match), so the collectives meet.
std::optional<size_t> ready_gather(const Program& p, size_t next, const std::vector<Stamp>& starts);

// T: the parameters' and gradients' storage type (float, or bf16 under mixed precision).
template <class T>
class Zero3Units {
 public:
  // `zero_group`: the group ZeRO shards over (dp, or dp·cp), whose shards `shards` describes.
  Zero3Units(RankRuntime& rt, Group zero_group, const ZeroShards& shards);

  // The param_gather at program index `gather`, on the selected stream: the units making up
  // `ranges`, each all-gathered from every member's piece (this rank's in `param_shard`) into a
  // buffer of its own.
  void gather(uint32_t gather, const std::vector<ElementRange>& ranges, const T* param_shard);
  // Its parameters, for the pass that waits for it; reshard() frees them once the selected stream
  // (the compute stream, at that pass's end) has passed its last use.
  FlatView<const T> params(uint32_t gather) const;
  void reshard(uint32_t gather);

  // Zeroed full gradients of the ranges `gather` gathered, for the backward whose last compute is
  // at program index `compute` (the action the unit's grad_reduce depends on).
  FlatView<T> start_gradients(uint32_t gather, uint32_t compute);
  // The grad_reduce after that backward, on the selected stream: its gradients reduce-scattered
  // and added into `grad_shard` (padded), then freed once the stream has passed them.
  void reduce_scatter(uint32_t compute, T* grad_shard);

  // Nothing gathered, no gradients waiting (true between steps).
  bool empty() const { return params_.empty() && grads_.empty(); }

 private:
  // A gather's or a backward's full-size buffers: buffers[i] holds unit units[i] of the shards
  // (padded).
  struct Unit {
    std::vector<size_t> units;
    std::vector<Buffer<T>> buffers;
  };
  Unit allocate(const std::vector<size_t>& units, const char* what, bool for_overwrite);
  void release(Unit& u);

  RankRuntime& rt_;
  GroupComm& comm_;
  const ZeroShards& shards_;
  std::map<uint32_t, Unit> params_;  // by param_gather index
  std::map<uint32_t, Unit> grads_;   // by the backward's last compute index
};

}  // namespace shardplan
