// The data-parallel side of the interpreter (interpreter_state.h): gradient reductions over dp
// (dp × cp) and the norms' over tp and the tied embedding's over the first and last stage, ZeRO's
// parameter gathers and shards, the optimizer step, and the full state gathered and loaded.
#include <mpi.h>

#include <algorithm>
#include <cassert>
#include <span>
#include <tuple>
#include <vector>

#include "executor/action_ranges.h"
#include "executor/interpreter_state.h"
#include "executor/whole_layout.h"

namespace shardplan {

void RankInterpreter::State::all_reduce_tensor_grads(GroupComm& comm, ElementRange range) {
  if (l.zero == 0)
    return comm.all_reduce({grads.data() + range.begin, static_cast<size_t>(range.count())},
                           ReduceOp::sum);
  const ElementRange mine = shards.mine();
  const int64_t begin = std::clamp(range.begin, mine.begin, mine.end),
                end = std::clamp(range.end, mine.begin, mine.end);
  float* owned = l.zero >= 2 ? grad_shard.data() + (begin - mine.begin) : grads.data() + begin;
  Buffer<float> full = side_buffer(*rt, MemoryCategory::buffers, range.count(), "gradient gather");
  rt->group(zero_group).all_gather_range(shards, range, owned, full.data());
  comm.all_reduce(full.span(), ReduceOp::sum);
  dev.copy(owned, full.data() + (begin - range.begin), end - begin);
  rt->release_after_use(std::move(full));
}

void RankInterpreter::State::grad_reduce(const Action& a) {
  if (a.group == Group::tp) {
    for (const ParamTensor& x : layout.tensors)
      if (x.split == TensorSplit::replicated)
        all_reduce_tensor_grads(tp, {x.offset, x.offset + x.count()});
    return;
  }
  if (a.group == Group::pp) {
    const ParamTensor& x = layout.get(shard.embedding ? "wte" : "lm_head");
    return all_reduce_tensor_grads(*rt->embedding_group(), {x.offset, x.offset + x.count()});
  }
  // ZeRO-3: the unit's own gradients, from the backward this reduction follows (its one
  // dependency), which the head's include the tied word embedding it borrowed under pp = 1.
  if (l.zero >= 3) return zero3.reduce_scatter(program.deps_of(a).front(), grad_shard.data());
  GroupComm& comm = rt->group(a.group);
  const ElementRange mine = shards.mine();
  for (const ElementRange r : action_ranges(layout, a)) {
    float* full = grads.data() + r.begin;
    if (a.op == Collective::all_reduce) {
      comm.all_reduce({full, static_cast<size_t>(r.count())}, ReduceOp::sum);
    } else if (l.zero == 1) {  // the reduced part back into the buffer the optimizer steps
      const int64_t begin = std::clamp(r.begin, mine.begin, mine.end),
                    end = std::clamp(r.end, mine.begin, mine.end);
      Buffer<float> part =
          side_buffer(*rt, MemoryCategory::buffers, end - begin, "reduce-scatter output");
      comm.reduce_scatter_range(shards, r, full, part.data());
      dev.copy(grads.data() + begin, part.data(), part.size());
      rt->release_after_use(std::move(part));
    } else {  // ZeRO-2 keeps the shard; the bucket starts the next micro-batch at 0
      reduce_scatter_add(*rt, comm, shards, r, full, grad_shard.data());
      dev.fill(full, r.count(), 0.0f);
    }
  }
}

void RankInterpreter::State::param_gather(const Action& a, uint32_t index) {
  if (l.zero >= 3) return zero3.gather(index, action_ranges(layout, a), param_shard.data());
  const ElementRange mine = shards.mine();
  for (const ElementRange r : action_ranges(layout, a)) {
    const int64_t begin = std::clamp(r.begin, mine.begin, mine.end);
    rt->group(a.group).all_gather_range(shards, r, params.data() + begin, params.data() + r.begin);
  }
}

void RankInterpreter::State::optimizer_step() {
  if (l.zero == 0) return adam_step(dev, settings.adam, adam, params.span(), grads.span());
  const ElementRange mine = shards.mine();
  const auto n = static_cast<size_t>(shards.padded());
  const auto padded = [&](float* p, Buffer<float>& scratch) {
    if (mine.count() == shards.padded()) return std::span<float>(p, n);
    scratch = alloc.allocate<float>(MemoryCategory::buffers, shards.padded(), "padded shard");
    dev.copy(scratch.data(), p, mine.count());
    return scratch.span();
  };
  Buffer<float> p_scratch, g_scratch;
  const std::span<float> p =
      l.zero >= 3 ? param_shard.span() : padded(params.data() + mine.begin, p_scratch);
  const std::span<float> g =
      l.zero >= 2 ? grad_shard.span() : padded(grads.data() + mine.begin, g_scratch);
  adam_step(dev, settings.adam, adam, p, g);
  if (!p_scratch.empty()) dev.copy(params.data() + mine.begin, p.data(), mine.count());
}

const float* RankInterpreter::State::owned_params() const {
  if (l.zero >= 3) return param_shard.data();
  return l.zero >= 1 ? params.data() + shards.mine().begin : params.data();
}

std::vector<float> RankInterpreter::State::rank_flat(const float* owned) {
  std::vector<float> flat(static_cast<size_t>(layout.total));
  streams.select(Stream::compute);
  Buffer<float> gathered;
  if (l.zero > 0) {
    gathered = alloc.allocate<float>(MemoryCategory::buffers, layout.total, "gathered state");
    rt->group(zero_group).all_gather_range(shards, {0, layout.total}, owned, gathered.data());
    owned = gathered.data();
  }
  dev.copy_to_host(flat.data(), owned, layout.total * static_cast<int64_t>(sizeof(float)));
  return flat;
}

std::vector<float> RankInterpreter::State::whole(const float* owned) {
  return to_whole_layout(m, layout, program.coord, rank_flat(owned));
}

void RankInterpreter::State::own_shard(const float* flat, Buffer<float>& into) {
  const ElementRange mine = shards.mine();
  dev.fill(into.data(), into.size(), 0.0f);
  dev.copy(into.data(), flat + mine.begin, mine.count());
}

std::vector<float> RankInterpreter::gather_full_parameters() {
  State& s = *s_;
  return s.whole(s.owned_params());
}

FullState RankInterpreter::gather_full_state() {
  State& s = *s_;
  FullState out;
  out.params = gather_full_parameters();
  out.adam_m = s.whole(s.adam.m.data());
  out.adam_v = s.whole(s.adam.v.data());
  out.adam_step = s.adam.step;
  return out;
}

void RankInterpreter::load_full_state(const FullState& state) {
  State& s = *s_;
  s.streams.select(Stream::compute);
  // Each of what this rank owns taken from the whole model's layout: its flat buffer, or its
  // ZeRO shard of it (parameters under ZeRO-3, Adam's moments under ZeRO-1 and above).
  std::vector<float> flat(static_cast<size_t>(s.layout.total));
  for (auto [whole, into, sharded] :
       {std::tuple{&state.params, s.l.zero >= 3 ? &s.param_shard : &s.params, s.l.zero >= 3},
        std::tuple{&state.adam_m, &s.adam.m, s.l.zero >= 1},
        std::tuple{&state.adam_v, &s.adam.v, s.l.zero >= 1}}) {
    from_whole_layout(s.m, s.layout, *whole, flat.data());
    if (!sharded) {
      s.to_device(into->data(), flat);
      continue;
    }
    Buffer<float> on_device =
        s.alloc.allocate<float>(MemoryCategory::buffers, s.layout.total, "loaded state");
    s.to_device(on_device.data(), flat);
    s.own_shard(on_device.data(), *into);
  }
  s.dev.synchronize();
  s.adam.step = state.adam_step;
  MPI_Bcast(&s.adam.step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
}

}  // namespace shardplan
