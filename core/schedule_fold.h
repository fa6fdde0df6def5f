// A pipeline rank's program for one step folded by repetition: build_program's actions counted
// instead of unrolled. Every micro-batch repeats the same passes over the same units, and every
// layer of a kind the same steps, so one step's program is a short list of distinct actions, each
// with how often it runs per micro-batch and per step. The planner's estimate prices this list
// (simulator/estimate.h), in time independent of the layers and micro-batches, and so prices the
// very program the event simulator walks and the executor runs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "core/schedule.h"
#include "core/training.h"

namespace shardplan {

// One distinct action. Its micro_batch, chunk, layer range, peer and tag are those of one of the
// actions it stands for (layer ranges may differ between them only where reads_cold_input does
// not); deps are empty.
struct FoldedAction {
  Action action;
  int64_t per_microbatch = 0;  // times in each micro-batch's passes
  int64_t per_step = 0;        // times outside them: step-start gathers, step-end reductions
};

// The distinct actions of build_program(m, t, l, r) for `rank`, in
// the order they first appear in its passes (the step's own actions after the passes'), with
// their counts: for every action a of the program, the entry equal to it under same_priced_action
// counts it once, per micro-batch when a belongs to a micro-batch's passes (its compute and
// collectives, pipeline messages, ZeRO-3 gathers, ZeRO-2/3 reductions), per step otherwise.
std::vector<FoldedAction> fold_program(const Model& m, const Training& t, const Layout& l,
                                       int64_t rank);

// fold_program's two halves, each folded alone: the micro-batches' passes (compute, a layer's
// collectives, pipeline messages), which depend on no ZeRO stage and no data-parallel size but
// through the rank's placement, and the data-parallel actions and the step's end.
std::vector<FoldedAction> fold_passes(const Model& m, const Training& t, const Layout& l,
                                      int64_t rank);
std::vector<FoldedAction> fold_data_parallel(const Model& m, const Training& t, const Layout& l,
                                             int64_t rank);

// What of the split of the layers (Layout::stages) fold_passes(m, t, l, rank) reads, into `key`:
// each of the rank's chunks' layers and where they begin in the MoE pattern. Layouts alike but in
// their split and ZeRO stage fold a rank's passes alike where their keys are equal.
void passes_split_key(const Model& m, const Layout& l, int64_t rank, std::vector<int>& key);

// Whether two actions cost the same wherever they run on one rank: the same kind, stream, pass,
// op, group, bytes and parameters, the same parts and kInputGradOnly flag (compute), and the same
// reads_cold_input.
// Inline: folding a program asks it of every action against those kept so far.
constexpr bool same_priced_action(const Action& a, const Action& b) {
  return a.kind == b.kind && a.stream == b.stream && a.pass == b.pass && a.op == b.op &&
         a.group == b.group && a.bytes == b.bytes && a.params == b.params &&
         (a.kind != ActionKind::compute ||
          (a.parts == b.parts && (a.flags & kInputGradOnly) == (b.flags & kInputGradOnly))) &&
         reads_cold_input(a) == reads_cold_input(b);
}

// A hash of what same_priced_action compares (reads_cold_input left to it), so that actions it
// finds the same hash alike; beside it so that the two keep the same fields.
constexpr uint64_t priced_action_hash(const Action& a) {
  uint64_t h = static_cast<uint64_t>(a.kind) | static_cast<uint64_t>(a.stream) << 8 |
               static_cast<uint64_t>(a.pass) << 16 | static_cast<uint64_t>(a.op) << 24 |
               static_cast<uint64_t>(a.group) << 32;
  if (a.kind == ActionKind::compute)
    h ^= (static_cast<uint64_t>(a.parts) | uint64_t{(a.flags & kInputGradOnly) != 0} << 16) << 44;
  for (const uint64_t v : {static_cast<uint64_t>(a.bytes), static_cast<uint64_t>(a.params)})
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;  // Fibonacci hashing's multiplier
  return h ^ (h >> 29);
}

}  // namespace shardplan
