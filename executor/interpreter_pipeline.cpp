// The interpreter's micro-batches and pipeline messages (interpreter_state.h): each micro-batch
// chunk's state with its sampled tokens, the sends and receives between stages, and the hand-off
// between two stages on this rank (v_placement's turn at rank pp − 1).
#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "executor/data.h"
#include "executor/interpreter_state.h"
#include "executor/layers/context_parallel.h"
#include "executor/program_calls.h"

namespace shardplan {

template <class T>
MicroBatch<T>& RankState<T>::micro_batch(const Action& a) {
  auto [it, fresh] = live.try_emplace({a.micro_batch, a.chunk});
  MicroBatch<T>& mb = it->second;
  if (fresh) {
    const Stream s = streams.selected();
    streams.select(Stream::compute);  // where the layers read the tokens
    mb.inputs = alloc.allocate<int32_t>(MemoryCategory::buffers, dims.tokens(), "input tokens");
    mb.targets = alloc.allocate<int32_t>(MemoryCategory::buffers, dims.tokens(), "target tokens");
    sample_tokens(a.micro_batch, mb);
    streams.select(s);
  }
  take_handed_off(a, mb);
  return mb;
}

template <class T>
void RankState<T>::sample_tokens(int micro_batch, MicroBatch<T>& mb) {
  const int64_t first =
      first_sequence(program.coord.dp, micro_batch, l.micro_batch, l.num_microbatches);
  const auto whole = static_cast<size_t>(l.micro_batch * t.seq_len);
  std::vector<int32_t> inputs(whole), targets(whole);
  sample_micro_batch(text, settings.seed, step, first, l.micro_batch, t.seq_len, inputs, targets);
  if (l.cp > 1)
    for (std::vector<int32_t>* tokens : {&inputs, &targets}) {
      std::vector<int32_t> mine(static_cast<size_t>(dims.tokens()));
      take_local_tokens(dims, tokens->data(), mine.data());
      tokens->swap(mine);
    }
  to_device(mb.inputs.data(), inputs);
  to_device(mb.targets.data(), targets);
}

template <class T>
void RankState<T>::p2p(size_t i) {
  const Action& a = program.actions[i];
  const bool forward = a.pass == Pass::forward;
  const int64_t n = dims.local_tokens() * dims.hidden;
  MicroBatch<T>& mb = micro_batch(a);
  if (a.kind == ActionKind::recv) {
    Buffer<T>& into = forward ? mb.x : mb.grad;
    into = side_buffer<T>(*rt, forward ? MemoryCategory::activations : MemoryCategory::buffers, n,
                          forward ? "received activation" : "received gradient",
                          /*for_overwrite=*/true);
    check_message(program, i, into.bytes());
    rt->p2p().recv(into.data(), into.bytes(), a.peer, a.tag, a.pass);
  } else {
    Buffer<T> out = std::move(forward ? mb.x : mb.grad);
    assert(out.size() == n);
    check_message(program, i, out.bytes());
    rt->p2p().send(std::move(out).into_bytes(), a.peer, a.tag, a.pass);
    if (!forward) live.erase({a.micro_batch, a.chunk});
  }
  rt->p2p().finish_sends(false);
}

template <class T>
void RankState<T>::take_handed_off(const Action& a, MicroBatch<T>& mb) {
  const bool forward = a.pass == Pass::forward;
  if (!(forward || a.pass == Pass::backward) || !(forward ? mb.x : mb.grad).empty()) return;
  const int from = virtual_stage(l, program.coord.pp, a.chunk) + (forward ? -1 : 1);
  if (from < 0 || from >= l.pp * l.vpp) return;
  const StageSlot slot = stage_slot(l, from);
  if (slot.pp_rank != program.coord.pp) return;
  const auto it = live.find({a.micro_batch, slot.chunk});
  if (it == live.end())
    throw std::logic_error("interpreter: " + action_name(a) +
                           " starts before the pass on this rank that hands it its input");
  if (forward) {
    mb.x = std::move(it->second.x);
  } else {
    mb.grad = std::move(it->second.grad);
    live.erase(it);
  }
}

// The members defined in this file, for both storage types (interpreter.cpp instantiates its own).
#define SHARDPLAN_INSTANTIATE(T)                                    \
  template MicroBatch<T>& RankState<T>::micro_batch(const Action&); \
  template void RankState<T>::sample_tokens(int, MicroBatch<T>&);   \
  template void RankState<T>::p2p(size_t);                          \
  template void RankState<T>::take_handed_off(const Action&, MicroBatch<T>&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
