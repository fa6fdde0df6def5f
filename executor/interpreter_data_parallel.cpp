// The data-parallel side of the interpreter (interpreter_state.h): gradient reductions over dp
// (dp × cp) and the norms' over tp and the tied embedding's over the first and last stage, ZeRO's
// parameter gathers and shards, the optimizer step, and the full state gathered and loaded.
#include <mpi.h>

#include <algorithm>
#include <cassert>
#include <span>
#include <vector>

#include "executor/interpreter_state.h"
#include "executor/whole_layout.h"

namespace shardplan {

namespace {

// Elements of the tensors `pick` selects (they are contiguous in the layout).
template <class Pick>
ElementRange tensors_range(const ParamLayout& layout, Pick pick) {
  ElementRange r{layout.total, 0};
  for (const ParamTensor& t : layout.tensors)
    if (pick(t)) {
      r.begin = std::min(r.begin, t.offset);
      r.end = std::max(r.end, t.offset + t.count());
    }
  return r.end > r.begin ? r : ElementRange{};
}

}  // namespace

ElementRange RankInterpreter::State::embedding_range() const {
  return tensors_range(layout, [](const ParamTensor& x) {
    return x.component == ParamComponent::embedding ||
           x.component == ParamComponent::position_embedding;
  });
}

ElementRange RankInterpreter::State::head_range() const {
  return tensors_range(layout, [](const ParamTensor& x) {
    return x.layer < 0 &&
           (x.component == ParamComponent::norms || x.component == ParamComponent::head);
  });
}

std::vector<ElementRange> RankInterpreter::State::ranges_of(const Action& a) const {
  std::vector<ElementRange> out;
  const auto add = [&](ElementRange r) {
    if (r.count() == 0) return;
    if (!out.empty() && out.back().end == r.begin)
      out.back().end = r.end;
    else
      out.push_back(r);
  };
  if (has_part(a.parts, Part::embedding)) add(embedding_range());
  for (int layer = a.layer_begin; layer < a.layer_end; ++layer) add(layout.layer_range(layer));
  if (has_part(a.parts, Part::head)) add(head_range());
  return out;
}

void RankInterpreter::State::all_reduce_tensor_grads(GroupComm& comm, ElementRange range) {
  if (l.zero == 0)
    return comm.all_reduce({grads.data() + range.begin, static_cast<size_t>(range.count())},
                           ReduceOp::sum);
  const ElementRange mine = shards.mine();
  const int64_t begin = std::clamp(range.begin, mine.begin, mine.end),
                end = std::clamp(range.end, mine.begin, mine.end);
  float* owned = l.zero >= 2 ? grad_shard.data() + (begin - mine.begin) : grads.data() + begin;
  Buffer<float> full = side_buffer(MemoryCategory::buffers, range.count(), "gradient gather");
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
  GroupComm& comm = rt->group(a.group);
  const ElementRange mine = shards.mine();
  for (const ElementRange r : ranges_of(a)) {
    if (a.op == Collective::all_reduce) {
      comm.all_reduce({grads.data() + r.begin, static_cast<size_t>(r.count())}, ReduceOp::sum);
      continue;
    }
    const int64_t begin = std::clamp(r.begin, mine.begin, mine.end),
                  end = std::clamp(r.end, mine.begin, mine.end);
    Buffer<float> part = side_buffer(MemoryCategory::buffers, end - begin, "reduce-scatter output");
    comm.reduce_scatter_range(shards, r, grads.data() + r.begin, part.data());
    if (l.zero == 1) {
      dev.copy(grads.data() + begin, part.data(), part.size());
    } else {  // ZeRO-2/3 keep the shard; the accumulation buffer starts the next micro-batch at 0
      dev.residual_add(grad_shard.data() + (begin - mine.begin), part.data(), nullptr, 1,
                       part.size());
      dev.fill(grads.data() + r.begin, r.count(), 0.0f);
    }
    rt->release_after_use(std::move(part));
  }
}

void RankInterpreter::State::param_gather(const Action& a) {
  const ElementRange mine = shards.mine();
  for (const ElementRange r : ranges_of(a)) {
    const int64_t begin = std::clamp(r.begin, mine.begin, mine.end);
    const float* part =
        l.zero >= 3 ? param_shard.data() + (begin - mine.begin) : params.data() + begin;
    rt->group(a.group).all_gather_range(shards, r, part, params.data() + r.begin);
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
  std::vector<float> flat(static_cast<size_t>(s.layout.total));
  from_whole_layout(s.m, s.layout, state.params, flat.data());
  s.to_device(s.params.data(), flat);
  if (s.l.zero >= 3) s.own_shard(s.params.data(), s.param_shard);
  for (auto [whole, into] :
       {std::pair{&state.adam_m, &s.adam.m}, std::pair{&state.adam_v, &s.adam.v}}) {
    from_whole_layout(s.m, s.layout, *whole, flat.data());
    if (s.l.zero == 0) {
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
