#include "simulator/comm_volume.h"

#include <algorithm>

#include "simulator/rank_shape.h"

namespace shardplan {

int64_t dp_bucket_elements(int64_t dp) {
  return std::max<int64_t>(40'000'000, 1'000'000 * dp);
}

int64_t dense_replicas(const Layout& l) {
  return int64_t{l.dp} * l.cp;
}
int64_t expert_replicas(const Layout& l) {
  return int64_t{l.dp / l.ep} * l.cp;
}

double volume_bytes(const CollectiveCall& c, int n, int64_t calls_per_step) {
  return static_cast<double>(c.bytes) * bus_bandwidth_factor(c.collective, n) *
         static_cast<double>(calls_per_step);
}

namespace {

// Names of one parameter group's data-parallel collectives.
struct DataParallelNames {
  std::string_view grad_all_reduce, grad_reduce_scatter, param_all_gather, forward_all_gather,
      backward_all_gather;
};
constexpr DataParallelNames kDenseNames{"dp_grad_all_reduce", "zero_grad_reduce_scatter",
                                        "zero_param_all_gather", "zero3_forward_all_gather",
                                        "zero3_backward_all_gather"};
constexpr DataParallelNames kExpertNames{
    "expert_dp_grad_all_reduce", "expert_zero_grad_reduce_scatter", "expert_zero_param_all_gather",
    "expert_zero3_forward_all_gather", "expert_zero3_backward_all_gather"};

struct ParamGroup {
  const DataParallelNames& names;
  int64_t params = 0;  // on this rank before ZeRO
  Group group = Group::dp;
  int group_size = 0;  // 0: the whole placement group
  int64_t replicas = 1;
};

// Gradient reduction and parameter gathers of one parameter group (ZeRO paper §5, §7):
//   stage 0: all-reduce of the gradients once per step, in buckets (DDP under no_sync, Megatron);
//   stage 1: reduce-scatter of the gradients once per step, all-gather of the updated parameters;
//   stage 2: the reduce-scatter after every micro-batch's backward (DeepSpeed partitions the
//            gradients as they are produced), the all-gather once per step;
//   stage 3: per micro-batch, every unit's parameters gathered for forward and again for backward
//            (FSDP reshard_after_forward) and its gradients reduce-scattered; one unit per layer
//            (transformer auto-wrap policy).
void add_data_parallel(std::vector<CollectiveCall>& out, const ParamGroup& p, const Training& t,
                       int zero, int layers) {
  if (p.replicas <= 1 || p.params == 0) return;
  const int64_t e = dtype_bytes(t.dtype), g = dtype_bytes(t.grad_dtype);
  const auto mb = CommFrequency::per_microbatch, step = CommFrequency::per_step;
  // Parameter gathers read shards the optimizer wrote a step ago; a bucket of several layers
  // holds gradients written over their whole backward; a ZeRO-3 unit's, its layer's just now.
  if (zero == 3) {
    const int64_t units = std::max(layers, 1);
    const int64_t unit = shard_size(p.params, units);
    out.push_back({p.names.forward_all_gather, Collective::all_gather, p.group, p.group_size,
                   e * unit, units, mb, CommWindow::forward, true});
    out.push_back({p.names.backward_all_gather, Collective::all_gather, p.group, p.group_size,
                   e * unit, units, mb, CommWindow::backward, true});
    out.push_back({p.names.grad_reduce_scatter, Collective::reduce_scatter, p.group, p.group_size,
                   g * unit, units, mb, CommWindow::backward, false, unit});
    return;
  }
  const int64_t buckets = shard_size(p.params, dp_bucket_elements(p.replicas));
  const int64_t bucket = shard_size(p.params, buckets);
  const bool several_layers = layers > 1;
  if (zero == 0) {
    out.push_back({p.names.grad_all_reduce, Collective::all_reduce, p.group, p.group_size,
                   g * bucket, buckets, step, CommWindow::backward, several_layers});
    return;
  }
  out.push_back({p.names.grad_reduce_scatter, Collective::reduce_scatter, p.group, p.group_size,
                 g * bucket, buckets, zero == 2 ? mb : step, CommWindow::backward, several_layers,
                 bucket});
  out.push_back({p.names.param_all_gather, Collective::all_gather, p.group, p.group_size,
                 e * bucket, buckets, step, CommWindow::forward, true});
}

}  // namespace

void stage_collectives(const Model& m, const Training& t, const Layout& l, const StageLayers& s,
                       std::vector<CollectiveCall>& out) {
  out.clear();
  const RankShape r = rank_shape(t, l);
  const int64_t e = dtype_bytes(t.dtype);
  const int64_t layers = s.layers();
  const int64_t passes = l.recompute == Recompute::full ? 3 : 2;  // forward, backward, re-forward
  const int64_t activation = e * r.tokens() * m.hidden;           // one micro-batch's hidden states
  const auto mb = CommFrequency::per_microbatch;

  if (l.tp > 1) {
    // Each layer has two tensor-parallel regions (attention, MLP), each entered and left once per
    // pass: an all-reduce after the row-parallel projection in forward and after the column-
    // parallel one in backward (Shoeybi et al. 2019 §3, the f and g operators); under sequence
    // parallelism each becomes an all-gather on entry and a reduce-scatter on exit (Korthikanti
    // §4.2.2). The vocab-parallel embedding reduces its output (first stage) and the head's input
    // gradient is reduced (last stage).
    const int64_t calls = 2 * layers * passes + (s.first ? 1 : 0) + (s.last ? 1 : 0);
    if (!r.sequence_parallel) {
      out.push_back({"tp_all_reduce", Collective::all_reduce, Group::tp, 0, activation, calls, mb,
                     CommWindow::none});
    } else {
      out.push_back({"tp_all_gather", Collective::all_gather, Group::tp, 0, activation, calls, mb,
                     CommWindow::none});
      out.push_back({"tp_reduce_scatter", Collective::reduce_scatter, Group::tp, 0, activation,
                     calls, mb, CommWindow::none});
      // The layer inputs kept as sequence shards are gathered again for the weight gradients.
      out.push_back({"tp_all_gather_wgrad", Collective::all_gather, Group::tp, 0, activation,
                     2 * layers, mb, CommWindow::backward});
    }
  }
  if (l.cp > 1) {
    // Ring attention: cp − 1 steps pass this rank's K and V block on in forward, K, V and their
    // gradients in backward (Megatron-Core / TransformerEngine context parallelism).
    const int64_t kv = shard_size(m.num_kv_heads, l.tp) * m.head_dim;
    const int64_t forwards = passes - 1;  // forward, and the re-forward under full recompute
    const int64_t steps = (l.cp - 1) * (forwards + 2);
    out.push_back({"cp_kv_send_recv", Collective::send_recv, Group::cp, 0, 2 * e * r.tokens() * kv,
                   layers * steps, mb, CommWindow::attention});
  }
  if (l.ep > 1 && s.moe_layers > 0) {
    // Dispatch and combine per MoE layer and pass, each token sent to top_k experts.
    out.push_back({"ep_all_to_all", Collective::all_to_all, Group::ep, 0,
                   e * r.region_tokens() * m.moe.top_k * m.hidden, 2 * s.moe_layers * passes, mb,
                   CommWindow::none});
  }
  if (l.pp > 1) {
    // One activation forward and one gradient backward per micro-batch and model chunk, each
    // exchanged with both neighbours at once (Megatron-LM send_forward_recv_backward). Without
    // sequence parallelism each tp rank sends 1/tp of it (scatter/gather, Narayanan 2021 §4.1).
    const int64_t bytes =
        r.sequence_parallel ? e * r.region_tokens() * m.hidden : activation / l.tp;
    out.push_back({"pp_send_recv", Collective::send_recv, Group::pp, 0, bytes, 2 * int64_t{l.vpp},
                   mb, CommWindow::pipeline});
  }

  const ParamShard p = param_shard(m, l, s);
  add_data_parallel(out, {kDenseNames, p.dense(), dense_dp_group(l), 0, dense_replicas(l)}, t,
                    l.zero, s.layers());
  // With cp > 1 the expert replicas (dp/ep × cp) are a subset of the dp × cp group.
  const int64_t experts = expert_replicas(l);
  add_data_parallel(out,
                    {kExpertNames, p.experts, l.cp > 1 ? Group::dp_cp : Group::expert_dp,
                     l.cp > 1 ? static_cast<int>(experts) : 0, experts},
                    t, l.zero, s.moe_layers);
  if (m.tied_embeddings && l.pp > 1 && (s.first || s.last)) {
    // The first stage's embedding and the last stage's head copy sum their gradients (Megatron-LM
    // embedding group: the two ends of the pipeline).
    out.push_back({"embedding_grad_all_reduce", Collective::all_reduce, Group::pp, 2,
                   dtype_bytes(t.grad_dtype) * shard_size(m.vocab, l.tp) * m.hidden, 1,
                   CommFrequency::per_step, CommWindow::none});
  }
}

}  // namespace shardplan
