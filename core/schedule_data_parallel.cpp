// The data-parallel side of a step: gradient buckets reduced while the backward pass runs, ZeRO
// parameter gathers (per bucket at the start of the step for ZeRO-1/2, per layer with prefetch for
// ZeRO-3), the norm and tied-embedding reductions, and the optimizer step.
#include <algorithm>

#include "core/schedule_detail.h"
#include "core/zero_units.h"

namespace shardplan::schedule_detail {
namespace {

// The chunk's buckets of the parameters `params_of` counts (core/zero_units.h), closing at
// `threshold` (core/schedule.h: bucket_threshold).
template <class ParamsOf>
void add_buckets(std::vector<Bucket>& out, const Chunk& c, Group g, int64_t threshold,
                 ParamsOf params_of) {
  std::vector<int64_t> params;
  for (const Unit& u : c.units) params.push_back(params_of(u));
  for (const UnitSpan& b : gradient_buckets(params, threshold))
    out.push_back(Bucket{g, b.first, b.last, b.params});
}

// Elements a ZeRO reduce-scatter or all-gather over bucket `b` moves on each member, as the
// executor moves them (core/zero_units.h): every ZeRO unit it covers padded to members·ceil(n /
// members). The units are the bucket, except under ZeRO-3 with a head borrowing the tied word
// embedding (pp = 1): there the word embedding is a unit of its own, split from the embedding's
// bucket (zero_unit_params) and carried by the head's gather and reduction (`borrowed`).
int64_t padded_params(const DataParallel& dp, const Chunk& c, const Bucket& b, int64_t borrowed) {
  const bool split_word =
      dp.zero == 3 && b.group != Group::expert_dp && c.virtual_stage == 0 && b.first_unit == 0;
  const int64_t word = split_word ? c.units.back().borrowed_params : 0;
  const int64_t units[] = {word, b.params - word, borrowed};
  const int64_t members = b.group == Group::expert_dp ? dp.expert_members : dp.dense_members;
  return zero_shard_params(units, members) * members;
}

// A bucket's collective. A ZeRO-3 unit's gather, and the reduction of the gradients its use made,
// also carry the tied word embedding it borrows (`with_borrowed`: Unit::borrowed_params, the
// head's under pp = 1); expert buckets borrow nothing. An all-reduce moves the parameters, a ZeRO
// collective their padded units.
Action bucket_action(const DataParallel& dp, const Chunk& c, const Bucket& b, ActionKind kind,
                     Stream s, Collective op, int64_t element_bytes, bool with_borrowed) {
  const int64_t borrowed =
      with_borrowed && b.group != Group::expert_dp ? c.units[b.first_unit].borrowed_params : 0;
  Action a{.kind = kind,
           .stream = s,
           .op = op,
           .group = b.group,
           .chunk = c.chunk,
           .layer_begin = c.units[b.first_unit].layer_begin,
           .layer_end = c.units[b.last_unit].layer_end,
           .params = b.params + borrowed};
  const int64_t moved = op == Collective::all_reduce ? a.params : padded_params(dp, c, b, borrowed);
  a.bytes = moved * element_bytes;
  for (int u = b.first_unit; u <= b.last_unit; ++u) a.parts |= c.units[u].parts;
  if (borrowed > 0) a.parts |= part_bit(Part::embedding);
  return a;
}

uint32_t last_compute(const Program& p) {
  for (size_t i = p.actions.size(); i-- > 0;)
    if (p.actions[i].kind == ActionKind::compute) return static_cast<uint32_t>(i);
  return kNone;
}

}  // namespace

DataParallel plan_data_parallel(const Training& t, const Layout& l,
                                const std::vector<Chunk>& chunks) {
  DataParallel dp;
  dp.zero = l.zero;
  dp.whole_all_reduce = zero1_reduced_whole(t, l);
  dp.overlap = (t.overlap_grad_reduce && !dp.whole_all_reduce) || reduces_every_microbatch(l.zero);
  dp.overlap_param_gather = t.overlap_param_gather;
  dp.dtype = t.dtype;
  dp.grad_dtype = t.grad_dtype;
  dp.dense_members = group_size(l, dense_dp_group(l));
  dp.expert_members = group_size(l, Group::expert_dp);
  const bool dense = group_size(l, dense_dp_group(l)) > 1;
  const bool expert = group_size(l, Group::expert_dp) > 1;
  for (const Chunk& c : chunks) {
    std::vector<Bucket> buckets;
    const int64_t threshold = bucket_threshold(t, l);
    if (dense)
      add_buckets(buckets, c, dense_dp_group(l), threshold,
                  [](const Unit& u) { return u.params.dense(); });
    if (expert)
      add_buckets(buckets, c, Group::expert_dp, threshold,
                  [](const Unit& u) { return u.params.experts; });
    dp.buckets.push_back(std::move(buckets));
    dp.unit_used.emplace_back(c.units.size(), false);
    dp.bucket_gather.emplace_back();
    dp.backwards_done.push_back(0);
  }
  return dp;
}

Action step_start_gather(const DataParallel& dp, const Chunk& c, const Bucket& b) {
  return bucket_action(dp, c, b, ActionKind::param_gather,
                       dp.overlap_param_gather ? Stream::zero_comm : Stream::compute,
                       Collective::all_gather, dtype_bytes(dp.dtype), /*with_borrowed=*/false);
}

Action unit_gather(const DataParallel& dp, const Chunk& c, const Bucket& b, int micro_batch,
                   Pass pass) {
  Action a = bucket_action(dp, c, b, ActionKind::param_gather, Stream::zero_comm,
                           Collective::all_gather, dtype_bytes(dp.dtype), /*with_borrowed=*/true);
  a.micro_batch = micro_batch;
  a.pass = pass;
  return a;
}

Action bucket_reduction(const DataParallel& dp, const Chunk& c, const Bucket& b, int micro_batch) {
  Action a = bucket_action(
      dp, c, b, ActionKind::grad_reduce, dp.overlap ? Stream::dp_comm : Stream::compute,
      dp.zero == 0 || dp.whole_all_reduce ? Collective::all_reduce : Collective::reduce_scatter,
      dtype_bytes(dp.grad_dtype), /*with_borrowed=*/dp.zero == 3);
  a.micro_batch = micro_batch;
  return a;
}

// ZeRO-1/2 update only the owned shard, so each step starts by gathering the parameters the
// previous step updated, bucket by bucket in the order the forward first uses them, each
// overlapping the forward before its first use (Megatron-LM's distributed optimizer with
// overlap_param_gather), or, where the framework gathers them whole as its optimizer step ends,
// on the compute stream before the first forward.
void emit_step_start_gathers(Program& p, DataParallel& dp, const std::vector<Chunk>& chunks) {
  if (dp.zero != 1 && dp.zero != 2) return;
  for (const Chunk& c : chunks) {
    auto& buckets = dp.buckets[c.chunk];
    std::vector<size_t> order(buckets.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return buckets[a].first_unit < buckets[b].first_unit;
    });
    dp.bucket_gather[c.chunk].assign(buckets.size(), kNone);
    for (size_t i : order)
      dp.bucket_gather[c.chunk][i] = emit(p, step_start_gather(dp, c, buckets[i]), {});
  }
}

std::vector<uint32_t> before_unit(Program& p, DataParallel& dp, const Chunk& c, int unit,
                                  int micro_batch, Pass pass) {
  std::vector<uint32_t> gathers;
  if (dp.zero == 1 || dp.zero == 2) {
    if (dp.unit_used[c.chunk][unit]) return gathers;
    dp.unit_used[c.chunk][unit] = true;
    const auto& buckets = dp.buckets[c.chunk];
    for (size_t b = 0; b < buckets.size(); ++b)
      if (buckets[b].first_unit <= unit && unit <= buckets[b].last_unit)
        gathers.push_back(dp.bucket_gather[c.chunk][b]);
  } else if (dp.zero == 3) {
    // FSDP's prefetch with its rate limit of two gathered units (Zhao et al. 2023 §4.2): a unit's
    // gather starts once the unit used two before it has finished and been resharded, so it
    // overlaps the compute of the unit just before it.
    for (const Bucket& b : dp.buckets[c.chunk])
      if (b.first_unit == unit)
        gathers.push_back(emit(p, unit_gather(dp, c, b, micro_batch, pass), {dp.use_end[0]}));
  }
  return gathers;
}

void after_unit(Program& p, DataParallel& dp, const Chunk& c, int unit, int micro_batch, Pass pass,
                uint32_t last_compute_of_unit, bool last_backward_of_chunk) {
  if (dp.zero == 3) {
    dp.use_end[0] = dp.use_end[1];
    dp.use_end[1] = last_compute_of_unit;
  }
  if (pass != Pass::backward || !dp.overlap) return;
  if (!reduces_every_microbatch(dp.zero) && !last_backward_of_chunk) return;
  for (const Bucket& b : dp.buckets[c.chunk])
    if (b.first_unit == unit)
      dp.last_reduction = emit(p, bucket_reduction(dp, c, b, micro_batch), {last_compute_of_unit});
}

// megatron/core/distributed/finalize_model_grads.py: after the data-parallel reductions, the
// norm gradients are all-reduced over tp under sequence parallelism, and the tied word-embedding
// gradients over the first and last pipeline stages; then the optimizer steps.
void StageParams::add(const Chunk& c, int64_t times) {
  for (const Unit& u : c.units) {
    dense += times * u.params.dense();
    expert += times * u.params.experts;
    replicated += times * u.params.tp_replicated();
  }
}

std::vector<Action> step_end_actions(const DataParallel& dp, const Model& m, const Layout& l,
                                     const StageParams& params, bool embedding_pair) {
  const auto [dense, expert, replicated] = params;
  std::vector<Action> out;
  auto reduce = [&](Group g, Stream s, int64_t elements) {
    out.push_back(Action{.kind = ActionKind::grad_reduce,
                         .stream = s,
                         .op = Collective::all_reduce,
                         .group = g,
                         .bytes = elements * dtype_bytes(dp.grad_dtype),
                         .params = elements});
  };
  if (l.sequence_parallel && l.tp > 1) reduce(Group::tp, Stream::tp_comm, replicated);
  if (embedding_pair) {
    // Under ZeRO each end owns other pieces of the word embedding (their units differ), so the
    // pieces are first summed into the whole tensor over the ZeRO group, in place in zeros.
    // Tensor-parallel peers need no such step: they share their dp coordinate and own the same
    // pieces; nor does a ZeRO-1 reduced whole, whose ranks all hold the whole reduced tensor.
    const int64_t word = word_embedding_shard(m, l.tp);
    if (dp.zero >= 1 && dp.dense_members > 1 && !dp.whole_all_reduce)
      reduce(dense_dp_group(l), Stream::pp_comm, word);
    reduce(Group::pp, Stream::pp_comm, word);
  }
  // ZeRO-1 and above: each rank updates 1/dp of the dense and 1/expert_dp of the expert weights.
  const bool sharded = dp.zero >= 1;
  out.push_back(
      Action{.kind = ActionKind::optimizer_step,
             .params = shard_size(dense, sharded ? group_size(l, dense_dp_group(l)) : 1) +
                       shard_size(expert, sharded ? group_size(l, Group::expert_dp) : 1)});
  return out;
}

void emit_step_end(Program& p, DataParallel& dp, const Model& m, const Layout& l,
                   const std::vector<Chunk>& chunks) {
  const uint32_t compute_end = last_compute(p);
  // Not overlapped: every bucket reduced once the whole backward is done (Megatron-LM 2021's
  // allreduce_gradients after the backward), the last chunk's first, as the backward finished them.
  if (!dp.overlap)
    for (auto c = chunks.rbegin(); c != chunks.rend(); ++c)
      for (const Bucket& b : dp.buckets[c->chunk])
        dp.last_reduction =
            emit(p, bucket_reduction(dp, *c, b, l.num_microbatches - 1), {compute_end});
  std::vector<uint32_t> finals = {dp.last_reduction};
  StageParams params;
  for (const Chunk& c : chunks) params.add(c, 1);
  for (const Action& a : step_end_actions(dp, m, l, params, !p.embedding_group.empty())) {
    if (a.kind == ActionKind::optimizer_step) {
      emit(p, a, finals);
    } else {
      finals.push_back(emit(p, a, {compute_end, dp.last_reduction}));
    }
  }
}

}  // namespace shardplan::schedule_detail
