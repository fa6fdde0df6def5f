// What the caching allocator of one rank reserves: the rank's allocations replayed, tensor by
// tensor, through PyTorch's allocator policy (caching_allocator.h) over its first two steps, in
// its pipeline order. Device memory a rank needs is this reserve, not the tensors it holds at its
// worst moment: a phase that asks for blocks larger than those an earlier phase freed (the loss's
// logits after the layers' activations, the optimizer's moments created at the first step) finds
// none cached that fits and reserves more.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "core/param_shard.h"
#include "core/training.h"
#include "simulator/execution_options.h"
#include "simulator/memory_model.h"

namespace shardplan {

struct AllocatorPeaks {
  int64_t allocated = 0;  // the most the replayed tensors held at once (rounded to blocks)
  int64_t reserved = 0;   // the segments the allocator obtained for them
};

// The rank of stage `s` whose memory items `r` gives, replayed:
//   start-up: parameters (a block per layer and per end of the model), the gradient buffer, the
//     fp32 master copy and the framework's buffers, as memory_items lists them;
//   each step, its pipeline order (core/schedule.h: pipeline_order) pass by pass: a forward keeps
//     each layer's activation tensors (activation_memory.h) and makes the layer's output before
//     the residual add for a moment; the last stage's loss makes the logits and the kernels'
//     fp32 copies (loss_memory); a backward makes each layer's input and MLP gradients, re-forms
//     a recomputed layer, and frees what the forward kept; under a split backward it then keeps
//     what each layer's W reads (layer_weight_grad_tensors) until that W;
//   the first optimizer step creates the Adam moments (PyTorch's optimizers create their state at
//     the first step), two per layer and end; a step that copies the gradients to fp32
//     (memory_model.h: step_grad_copy, DeepSpeed's optimizers, which make their moments at
//     start-up) makes and frees its copies, and at ZeRO-0/1 autograd's gradients, a block per
//     layer and end.
// Micro-batches past those the schedule's warm-up and one steady forward-backward pair need are
// left out: the steady state repeats the same requests and reserves nothing more.
// The micro-batches a replay runs of each step: the warm-up and one steady forward-backward pair
// (pp + 1; ZB-H2's longer warm-up 2pp; interleaved schedules need a multiple of pp; GPipe holds
// them all), at most the layout's.
int replayed_microbatches(const Layout& l);

AllocatorPeaks replay_allocations(const Model& m, const Training& t, const Layout& l,
                                  const StageLayers& s, const RankMemory& r,
                                  const ExecutionOptions& x);

// Sets every stage's allocator_cache_bytes (stages[i] is stage i) from its replay: the reserve
// beyond the replayed peak. The replay's allocator frees its cache before reserving past the
// capacity less runtime_reserved_bytes: add the runtime's memory (add_runtime_memory) first.
void add_allocator_cache(std::vector<RankMemory>& stages, const Model& m, const Training& t,
                         const Layout& l, const ExecutionOptions& x);

}  // namespace shardplan
