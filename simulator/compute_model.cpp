#include "simulator/compute_model.h"

#include <algorithm>

#include "core/placement.h"
#include "simulator/fp8_linears.h"
#include "simulator/parts_compute.h"
#include "simulator/rank_shape.h"

namespace shardplan {

void add_compute(MicrobatchCompute& dst, const MicrobatchCompute& src, double times) {
  add_pass(dst.forward, src.forward, times);
  add_pass(dst.backward, src.backward, times);
  add_pass(dst.weight_grad, src.weight_grad, times);
  add_pass(dst.recompute, src.recompute, times);
}

void add_pass(PassCost& dst, const PassCost& src, double times) {
  for (size_t k = 0; k < src.kinds.size(); ++k) {
    dst.kinds[k].flops += times * src.kinds[k].flops;
    dst.kinds[k].bytes += times * src.kinds[k].bytes;
    dst.kinds[k].time_s += times * src.kinds[k].time_s;
    dst.kinds[k].kernels += times * src.kinds[k].kernels;
  }
  dst.issue_s += times * src.issue_s;
  dst.host_wait_s += times * src.host_wait_s;
}

double PassCost::flops() const {
  return kinds[0].flops + kinds[1].flops + kinds[2].flops;
}
double PassCost::kernels() const {
  return kinds[0].kernels + kinds[1].kernels + kinds[2].kernels;
}
double PassCost::device_s() const {
  return kinds[0].time_s + kinds[1].time_s + kinds[2].time_s;
}

void settle_host_bound(PassCost& p) {
  p.host_wait_s = std::max(0.0, p.issue_s - p.device_s());
}

namespace {

double as_double(int64_t v) {
  return static_cast<double>(v);
}

// Backward of a flash attention kernel: five matmuls against the forward's two, counted as
// 2.5× the forward FLOPs (Dao 2023, FlashAttention-2 §4.1 benchmark convention).
constexpr double kFlashBackwardFactor = 2.5;
// Its backward launches three kernels: the dO·O row sums, the dQ/dK/dV loop, and the conversion
// of the fp32 dQ accumulator (Dao-AILab/flash-attention csrc/flash_attn/src/
// flash_bwd_launch_template.h: flash_bwd_dot_do_o_kernel, flash_bwd_dq_dk_dv_loop_seqk_parallel_
// kernel, flash_bwd_convert_dq_kernel; hopper/ has the same three stages).
constexpr double kFlashBackwardKernels = 3;
// A causal mask lets flash attention skip the blocks above the diagonal: half the products
// (Dao 2023 §3.1.1). Unfused attention computes the full s×s scores and masks them.
constexpr double kCausalFraction = 0.5;

// Bytes per element of the memory-bound kernels, each counted as one read of every input and one
// write of every output (fused as Megatron-Core/TransformerEngine fuse them):
//   norm:     forward reads x, writes y; backward reads x and dy, writes dx.
//   residual: bias-dropout-add reads the branch and the residual, writes the sum (and the dropout
//             mask, 1 byte); backward adds the two incoming gradients (2 reads, 1 write) and runs
//             the dropout backward (reads dy and the mask, writes dx).
//   GeLU:     forward reads u, writes g(u); backward reads u and dg, writes du.
//   SwiGLU:   forward reads gate and up, writes silu(gate)·up; backward reads both and dy,
//             writes both gradients. Eager (ExecutionOptions::fused_swiglu false) it is silu
//             (reads gate, writes s) and the product (reads s and up, writes y) going forward;
//             backward the product's two gradients (each reads dy and the other operand, writes
//             one) and silu's (reads gate and ds, writes dgate).
//   softmax:  forward reads scores, writes probabilities; backward reads them and dy, writes dx.
constexpr double kNormForward = 2, kNormBackward = 3;
constexpr double kResidualForward = 3, kResidualBackward = 3;
constexpr double kSoftmaxForward = 2, kSoftmaxBackward = 3;
constexpr double kMaskBytes = 1;

// Kernels one operation launches going forward and backward.
struct Launches {
  double forward = 1, backward = 1;
};

// The loss's passes over the logits, bytes per logit each way, by its kernels (core/framework.h),
// for logits of `e` bytes and the fp32 (f = 4) they are computed in; a cast exists only where the
// logits are not fp32 already.
struct CrossEntropyPasses {
  double forward_bytes = 0, backward_bytes = 0;
  Launches launches;
};

CrossEntropyPasses cross_entropy_passes(CrossEntropyKernel k, int64_t elem_bytes) {
  const double e = as_double(elem_bytes), f = as_double(dtype_bytes(Dtype::fp32));
  const double cast = e == f ? 0 : e + f, casts = e == f ? 0 : 1;
  switch (k) {
    case CrossEntropyKernel::fused:
      // One kernel: reads the logits, writes the fp32 softmax; backward reads it and writes the
      // logits' gradient.
      return {e + f, e + f, {1, 1}};
    case CrossEntropyKernel::megatron:
    case CrossEntropyKernel::nanotron:  // the same passes, one of them out of place
      // Cast; max (read); subtract (read, write); exp (read, write); sum (read); divide (read,
      // write). Backward: the softmax scaled by the loss's gradient (read, write); cast back.
      return {cast + 8 * f, cast + 2 * f, {5 + casts, 1 + casts}};
    case CrossEntropyKernel::flash_attn:
      // Reads the logits for the row statistics; backward reads them again and writes the
      // gradient (flash_attn/losses/cross_entropy.py over csrc/xentropy).
      return {e, 2 * e, {1, 1}};
    case CrossEntropyKernel::pytorch:
      // Cast; log_softmax over rows too long for shared memory: max, sum of exponentials and the
      // output, each a pass over the input, then the write. Backward: nll_loss's dense gradient
      // (write); log_softmax's backward, a pass for the row sums of the gradient, then gradient and
      // output read and the input's gradient written; cast back.
      return {cast + 4 * f, cast + 5 * f, {1 + casts, 2 + casts}};
    case CrossEntropyKernel::shardplan:
      // Widen; row max (read); exponentials and their sums (read, write). Backward: the gradient
      // in place (read, write); narrow.
      return {cast + 3 * f, cast + 2 * f, {2 + casts, 1 + casts}};
  }
  return {};
}

// Adding one micro-batch's weight gradients into the step's accumulated ones, per weight element
// and averaged over the step's micro-batches (core/framework.h: GradAccumulation): `share`, the
// elements added per weight element: none when the kernel adds them itself, all every
// micro-batch for a hook, all but the first micro-batch's under AccumulateGrad, which assigns that
// one; a rank's ZeRO-2/3 shard only, where the gradients are reduce-scattered after every backward
// (DeepSpeed's partitioned gradients, FSDP's saved shard), of the dense weights over dp·cp and of
// the experts' over their own data-parallel group. `bytes` per element added: the new gradient read
// in the compute dtype, the accumulator read and written in the gradient dtype.
struct GradAdd {
  double share = 0;
  double expert_share = 0;
  double bytes = 0;
};

GradAdd grad_add(GradAccumulation mode, const Training& t, const Layout& l) {
  if (mode == GradAccumulation::in_place || mode == GradAccumulation::fused) return {};
  const int64_t e = dtype_bytes(t.dtype), g = dtype_bytes(t.grad_dtype);
  // grad_accumulation_reads: the dense shard's ranks and the micro-batches (the expert group
  // follows from dp, cp and ep, which the caches key).
  const GradAccumulationReads reads = grad_accumulation_reads(mode, t, l);
  const double added =
      reads.microbatches > 0 ? (reads.microbatches - 1.0) / reads.microbatches : 1.0;
  const double dense = reads.shard_ranks > 1 ? 1.0 / reads.shard_ranks : 1.0;
  const double experts = reads.shard_ranks > 0 ? 1.0 / group_size(l, Group::expert_dp) : 1.0;
  return {added * dense, added * experts, as_double(e + 2 * g)};
}

// Whose gradients a GEMM's B operand has: none (attention's K and V), the dense weights', or the
// experts'.
enum class Weights { none, dense, experts };

// How tensor parallelism splits a linear layer (Shoeybi et al. 2019 §3): column-parallel (its
// input gathered under sequence parallelism), row-parallel (its output reduce-scattered), or not
// at all (an expert's, within its own rank).
enum class TpSplit { column, row, none };

// Accumulates operations into the three passes of the part being built. `recomputed` marks
// operations that the recomputation mode runs again inside the backward.
struct PassBuilder {
  const DeviceRates& rates;
  int64_t elem_bytes;
  double host_s_per_kernel;
  PartsCompute& out;
  std::vector<PricedOp>* ops = nullptr;
  Part part = Part::attention_qkv;
  GradAdd grad_add{};  // the weights' gradient accumulation (GradAdd)
  const Fp8Linears* fp8 = nullptr;  // the linear layers in FP8, when the training runs them
  int64_t region_rows = 0;          // a micro-batch's tokens on this rank outside the tp region

  // Records `op` of the current part (and its re-forward when `recomputed`) when ops are asked for.
  void record(PricedOp op, bool recomputed) {
    if (!ops) return;
    op.part = part;
    ops->push_back(op);
    if (recomputed && op.pass == Pass::forward) {
      op.pass = Pass::recompute;
      ops->push_back(op);
    }
  }
  double timed_gemm(Pass pass, bool recomputed, int64_t m, int64_t k, int64_t n, int64_t count,
                    const DeviceRates& at, int64_t operand_bytes) {
    const double t = gemm_time_s(at, m, k, n, operand_bytes, count, elem_bytes);
    PricedOp op{.pass = pass, .kind = OpKind::matmul, .m = m, .n = n, .k = k, .count = count};
    op.time_s = t;
    record(op, recomputed);
    return t;
  }
  // `launches` kernels moving `bytes` between them: each pays the device's fixed cost.
  double timed_kernel(Pass pass, bool recomputed, MemoryKernel kernel, double elements,
                      double bytes, double launches = 1) {
    const double t =
        kernel_time_s(rates, kernel, elements, bytes) + (launches - 1) * rates.kernel_overhead_s;
    record({.pass = pass,
            .kind = OpKind::memory_bound,
            .kernel = kernel,
            .elements = elements,
            .time_s = t},
           recomputed);
    return t;
  }

  // Adds `kernels` kernels of kind k, with their work and time, to pass p of the current part.
  void accumulate(PassCost& p, OpKind k, double flops, double bytes, double time_s,
                  double kernels) const {
    KindCost& kc = p[k];
    kc.flops += flops, kc.bytes += bytes, kc.time_s += time_s, kc.kernels += kernels;
    p.issue_s += kernels * host_s_per_kernel;
  }

  void add(OpKind k, double flops_fwd, double flops_bwd, double bytes_fwd, double bytes_bwd,
           double time_fwd, double time_bwd, bool recomputed, Launches launches = {}) {
    MicrobatchCompute& c = out[part];
    accumulate(c.forward, k, flops_fwd, bytes_fwd, time_fwd, launches.forward);
    accumulate(c.backward, k, flops_bwd, bytes_bwd, time_bwd, launches.backward);
    if (recomputed) accumulate(c.recompute, k, flops_fwd, bytes_fwd, time_fwd, launches.forward);
  }

  // `count` GEMMs Y = X·W of (m×k)·(k×n). Backward: dX = dY·Wᵀ, (m×n)·(n×k), and, as the
  // weight gradient, dW = Xᵀ·dY, (k×m)·(m×n): twice the forward FLOPs, their own output tiles,
  // then its accumulation over the step where W is a weight (`weights`). At the compute dtype's
  // rate, or `at` with operands of `operand_bytes`.
  LinearGemms gemm(int64_t m, int64_t k, int64_t n, bool recomputed, int64_t count = 1,
                   Weights weights = Weights::dense, const DeviceRates* at = nullptr,
                   int64_t operand_bytes = 0) {
    const DeviceRates& r = at ? *at : rates;
    const int64_t bytes = at ? operand_bytes : elem_bytes;
    const double flops = 2.0 * as_double(m) * as_double(k) * as_double(n) * as_double(count);
    const LinearGemms g{timed_gemm(Pass::forward, recomputed, m, k, n, count, r, bytes),
                        timed_gemm(Pass::backward, false, m, n, k, count, r, bytes),
                        timed_gemm(Pass::weight_grad, false, k, m, n, count, r, bytes)};
    add(OpKind::matmul, flops, flops, 0, 0, g.forward_s, g.dgrad_s, recomputed, {1, 1});
    accumulate(out[part].weight_grad, OpKind::matmul, flops, 0, g.wgrad_s, 1);
    if (weights != Weights::none) {
      GradAdd a = grad_add;
      if (weights == Weights::experts) a.share = a.expert_share;
      accumulate_gradients(as_double(k) * as_double(n) * as_double(count), a);
    }
    return g;
  }

  // `count` linear layers Y = X·W of (m×k)·(k×n): gemm, or in FP8 where the training runs them
  // there (Fp8Linears) — the GEMMs at the FP8 rate, X quantized going forward, dY going backward,
  // W once a step. Under sequence parallelism TE quantizes a column-parallel layer's input and a
  // row-parallel layer's output gradient on the rank's sequence shard (region_rows of the m rows),
  // before it gathers them. Each part keeps its first and last linear layer's GEMM times.
  void linear(TpSplit split, int64_t m, int64_t k, int64_t n, bool recomputed, int64_t count = 1,
              Weights weights = Weights::dense) {
    const LinearGemms g = fp8 ? gemm(m, k, n, recomputed, count, weights, &fp8->rates, 1)
                              : gemm(m, k, n, recomputed, count, weights);
    PartLinears& linears = out.linears_of(part);
    if (linears.first.forward_s == 0) linears.first = g;
    linears.last = g;
    if (!fp8) return;
    const double c = as_double(count);
    const auto cast = [&](Pass pass, bool again, double elements, double launches) {
      return timed_kernel(pass, again, MemoryKernel::fp8_cast, elements, elements * fp8->cast_bytes,
                          launches);
    };
    const double input_rows = as_double(split == TpSplit::column ? region_rows : m);
    const double output_rows = as_double(split == TpSplit::row ? region_rows : m);
    const double inputs = input_rows * as_double(k) * c;
    const double output_grads = output_rows * as_double(n) * c;
    const double weights_cast = as_double(k) * as_double(n) * c * fp8->weight_casts;
    const double launches = fp8->cast_launches;
    add(OpKind::memory_bound, 0, 0, inputs * fp8->cast_bytes, output_grads * fp8->cast_bytes,
        cast(Pass::forward, recomputed, inputs, launches),
        cast(Pass::backward, false, output_grads, launches), recomputed, {launches, launches});
    accumulate(out[part].forward, OpKind::memory_bound, 0, weights_cast * fp8->cast_bytes,
               cast(Pass::forward, false, weights_cast, launches * fp8->weight_casts),
               launches * fp8->weight_casts);
  }

  // `weights` gradient elements added into the step's accumulated gradients (GradAdd), after
  // `written_bytes` per element that the backward writes them with, in the weight-gradient pass.
  void accumulate_gradients(double weights, const GradAdd& a, double written_bytes = 0) {
    const double elements = weights * a.share;
    const double bytes = elements * a.bytes + weights * written_bytes;
    if (bytes == 0) return;
    const double t =
        timed_kernel(Pass::weight_grad, false, MemoryKernel::grad_accumulate, elements, bytes);
    accumulate(out[part].weight_grad, OpKind::memory_bound, 0, bytes, t, 1);
  }

  void flash_attention(AttentionKernel kernel, double flops_fwd, bool recomputed) {
    const double flops_bwd = kFlashBackwardFactor * flops_fwd;
    const auto [forward_rate, backward_rate] = flash_attention_flops_per_s(rates, kernel);
    const Launches launches{1, kFlashBackwardKernels};
    // Each launch pays the device's fixed cost, as gemm_time_s and kernel_time_s add it.
    const double fwd_s = launches.forward * rates.kernel_overhead_s + flops_fwd / forward_rate;
    const double bwd_s = launches.backward * rates.kernel_overhead_s + flops_bwd / backward_rate;
    record({.pass = Pass::forward, .kind = OpKind::attention, .time_s = fwd_s}, recomputed);
    record({.pass = Pass::backward, .kind = OpKind::attention, .time_s = bwd_s}, false);
    add(OpKind::attention, flops_fwd, flops_bwd, 0, 0, fwd_s, bwd_s, recomputed, launches);
  }

  // A memory-bound kernel and its gradient over `elements` (core/memory_kernel.h), moving the given
  // bytes per element going forward and backward.
  // `launches`: the kernels that move them, each paying the device's and the host's fixed cost.
  void memory(MemoryKernel fwd, MemoryKernel bwd, double elements, double fwd_bytes_per_element,
              double bwd_bytes_per_element, bool recomputed, Launches launches = {}) {
    const double bytes_fwd = elements * fwd_bytes_per_element;
    const double bytes_bwd = elements * bwd_bytes_per_element;
    add(OpKind::memory_bound, 0, 0, bytes_fwd, bytes_bwd,
        timed_kernel(Pass::forward, recomputed, fwd, elements, bytes_fwd, launches.forward),
        timed_kernel(Pass::backward, false, bwd, elements, bytes_bwd, launches.backward),
        recomputed, launches);
  }

  // The bias of a linear layer with `columns` outputs over `tokens`, when the framework does not
  // fuse it into the GEMM (executor/layers/linear.cpp): forward reads and writes the output, unless
  // the residual add after a row-parallel layer takes the bias with it (`in_residual`,
  // bias-dropout- add); backward reads the output gradient once for the column sums.
  void bias(bool present, const ExecutionOptions& x, int64_t tokens, int64_t columns,
            bool in_residual, bool recomputed) {
    if (!present || x.fused_bias) return;
    const double e = as_double(elem_bytes), n = as_double(tokens * columns);
    const double fwd_bytes = in_residual ? 0 : 2 * e * n;
    add(OpKind::memory_bound, 0, 0, fwd_bytes, e * n,
        in_residual
            ? 0
            : timed_kernel(Pass::forward, recomputed, MemoryKernel::bias_forward, n, fwd_bytes),
        timed_kernel(Pass::backward, false, MemoryKernel::bias_backward, n, e * n), recomputed,
        {in_residual ? 0.0 : 1.0, 1});
  }
};

// A layer's norm and residual add: the memory-bound kernels around each of its two blocks, as
// elements of the norm/residual region and bytes per element.
struct BlockEdges {
  double region = 0;
  double norm_fwd = 0, norm_bwd = 0, residual_fwd = 0, residual_bwd = 0;
};

BlockEdges block_edges(const Model& m, const RankShape& r, int64_t elem_bytes,
                       const ExecutionOptions& x) {
  const double e = as_double(elem_bytes);
  const double mask = x.dropout ? kMaskBytes : 0;
  const double dropout_bwd = x.dropout ? 2 * e + kMaskBytes : 0;
  return {as_double(r.region_tokens() * m.hidden), kNormForward * e, kNormBackward * e,
          kResidualForward * e + mask, kResidualBackward * e + dropout_bwd};
}

void add_norm(PassBuilder& b, const BlockEdges& edges, bool recomputed) {
  b.memory(MemoryKernel::norm_forward, MemoryKernel::norm_backward, edges.region, edges.norm_fwd,
           edges.norm_bwd, recomputed);
}

void add_residual(PassBuilder& b, const BlockEdges& edges, bool recomputed) {
  b.memory(MemoryKernel::residual_forward, MemoryKernel::residual_backward, edges.region,
           edges.residual_fwd, edges.residual_bwd, recomputed);
}

// attention_norm: the input norm; attention_qkv: QKV, RoPE; attention_core: attention, output
// projection, residual add.
void add_attention(PassBuilder& b, const Model& m, const RankShape& r, Recompute rc,
                   const BlockEdges& edges, const ExecutionOptions& x) {
  const double e = as_double(b.elem_bytes);
  const bool full = rc == Recompute::full;
  const bool core_again = rc != Recompute::none;  // selective: the core's s×s tensors
  const int64_t heads = shard_size(m.num_heads, r.tp);
  const int64_t q = heads * m.head_dim;
  const int64_t kv = shard_size(m.num_kv_heads, r.tp) * m.head_dim;
  const int64_t t = r.tokens();
  b.part = Part::attention_norm;
  add_norm(b, edges, full);
  b.part = Part::attention_qkv;
  b.linear(TpSplit::column, t, m.hidden, q + 2 * kv, full);  // column-parallel QKV
  b.bias(m.qkv_bias, x, t, q + 2 * kv, false, full);
  if (m.position_embedding == PositionEmbedding::rope)  // read and write q and k
    b.memory(MemoryKernel::rope, MemoryKernel::rope, as_double(t * (q + kv)), 2 * e, 2 * e, full);
  b.part = Part::attention_core;
  if (is_flash(x.attention)) {
    // QKᵀ and the product with V: 2·2·s·s_kv·d per head.
    b.flash_attention(
        x.attention,
        kCausalFraction * 4.0 * as_double(r.batch * heads * r.seq * r.kv_seq * m.head_dim),
        core_again);
  } else {
    // Selective recomputation re-forwards the scores and their softmax (the s×s tensors it does
    // not keep, Korthikanti et al. 2022 §5); the context, probabilities · V, is kept as the output
    // projection's input, so only full recomputation runs that GEMM again (as the executor does,
    // executor/layers/block.cpp).
    b.gemm(r.seq, m.head_dim, r.kv_seq, core_again, r.batch * heads, Weights::none);  // scores
    b.gemm(r.seq, r.kv_seq, m.head_dim, full, r.batch * heads, Weights::none);  // probabilities · V
    const double scores = as_double(r.batch * heads * r.seq * r.kv_seq);
    const double dropout_bytes = x.dropout ? 2 * e + kMaskBytes : 0;
    b.memory(MemoryKernel::softmax_forward, MemoryKernel::softmax_backward, scores,
             kSoftmaxForward * e + dropout_bytes, kSoftmaxBackward * e + dropout_bytes, core_again);
  }
  b.linear(TpSplit::row, t, q, m.hidden, full);  // row-parallel output projection
  // The output bias is added once, after the row-parallel sum: over the residual region.
  b.bias(m.out_bias, x, r.region_tokens(), m.hidden, true, full);
  add_residual(b, edges, full);
}

// mlp_norm: the pre-MLP norm; then mlp: MLP, residual add; or router: gate, and experts:
// permutation, experts, residual add.
void add_mlp(PassBuilder& b, const Model& m, const Layout& l, const RankShape& r, bool moe,
             bool full, const BlockEdges& edges, const ExecutionOptions& x) {
  const double e = as_double(b.elem_bytes);
  const bool swiglu = m.activation == Activation::swiglu;
  const int64_t up_widths = swiglu ? 2 : 1;
  const MemoryKernel act_fwd = swiglu ? MemoryKernel::swiglu_forward : MemoryKernel::gelu_forward;
  const MemoryKernel act_bwd = swiglu ? MemoryKernel::swiglu_backward : MemoryKernel::gelu_backward;
  const bool eager_swiglu = swiglu && !x.fused_swiglu;
  const double act_fwd_bytes = (!swiglu ? 2 : eager_swiglu ? 5 : 3) * e;
  const double act_bwd_bytes = (!swiglu ? 3 : eager_swiglu ? 9 : 5) * e;
  const Launches act_launches = eager_swiglu ? Launches{2, 3} : Launches{};
  const int64_t t = r.tokens();
  b.part = Part::mlp_norm;
  add_norm(b, edges, full);
  b.part = moe ? Part::router : Part::mlp;
  if (!moe) {
    const int64_t ffn = shard_size(m.ffn_hidden, r.tp);
    b.linear(TpSplit::column, t, m.hidden, up_widths * ffn, full);
    b.bias(m.mlp_bias, x, t, up_widths * ffn, false, full);
    b.memory(act_fwd, act_bwd, as_double(t * ffn), act_fwd_bytes, act_bwd_bytes, full,
             act_launches);
    b.linear(TpSplit::row, t, ffn, m.hidden, full);
    b.bias(m.mlp_bias, x, r.region_tokens(), m.hidden, true, full);
    add_residual(b, edges, full);
    return;
  }
  // MoE with balanced routing: t·top_k token copies per rank spread over its num_experts/ep
  // experts.
  const int64_t copies = t * m.moe.top_k;
  const int64_t local_experts = m.moe.num_experts / l.ep;
  const int64_t rows = shard_size(copies, local_experts);
  const int64_t ffn = shard_size(m.moe.expert_ffn_hidden, r.tp);
  b.gemm(t, m.hidden, m.moe.num_experts, full);  // router
  b.part = Part::experts;
  // Permute into expert order and back (read and write every copy once each way).
  b.memory(MemoryKernel::permute, MemoryKernel::permute, as_double((t + copies) * m.hidden), 2 * e,
           2 * e, full);
  b.linear(TpSplit::none, rows, m.hidden, up_widths * ffn, full, local_experts, Weights::experts);
  b.memory(act_fwd, act_bwd, as_double(copies * ffn), act_fwd_bytes, act_bwd_bytes, full,
           act_launches);
  b.linear(TpSplit::none, rows, ffn, m.hidden, full, local_experts, Weights::experts);
  add_residual(b, edges, full);
}

}  // namespace

GradAccumulationReads grad_accumulation_reads(GradAccumulation mode, const Training& t,
                                              const Layout& l) {
  if (mode != GradAccumulation::autograd) return {};
  const bool assigns_first = dtype_bytes(t.grad_dtype) == dtype_bytes(t.dtype);
  return {.shard_ranks = l.zero >= 2 ? l.dp * l.cp : 0,
          .microbatches = assigns_first ? l.num_microbatches : 0};
}

int parts_microbatches(const Training& t, const Layout& l, const ExecutionOptions& x) {
  if (fp8_weights_cached(t, l, x)) return l.num_microbatches;
  return grad_accumulation_reads(x.grad_accumulation, t, l).microbatches;
}

PartsCompute layer_compute(const Model& m, const Training& t, const Layout& l, bool moe_layer,
                           const DeviceRates& rates, const ExecutionOptions& x,
                           std::vector<PricedOp>* ops) {
  PartsCompute out;
  PassBuilder b{rates, dtype_bytes(t.dtype), x.host_s_per_kernel, out, ops};
  b.grad_add = grad_add(x.grad_accumulation, t, l);
  const std::optional<Fp8Linears> fp8 = fp8_linears(t, l, rates, x);
  if (fp8) b.fp8 = &*fp8;
  const RankShape r = rank_shape(t, l);
  b.region_rows = r.region_tokens();
  // Each block has a norm before it and a residual add after it.
  const BlockEdges edges = block_edges(m, r, b.elem_bytes, x);
  add_attention(b, m, r, l.recompute, edges, x);
  add_mlp(b, m, l, r, moe_layer, l.recompute == Recompute::full, edges, x);
  return out;
}

PartsCompute ends_compute(const Model& m, const Training& t, const Layout& l,
                          const DeviceRates& rates, const ExecutionOptions& x,
                          std::vector<PricedOp>* ops) {
  PartsCompute out;
  PassBuilder b{rates, dtype_bytes(t.dtype), x.host_s_per_kernel, out, ops};
  b.grad_add = grad_add(x.grad_accumulation, t, l);
  const RankShape r = rank_shape(t, l);
  const double e = as_double(b.elem_bytes);
  const int64_t tokens = r.tokens();
  const int64_t vocab = shard_size(m.vocab, l.tp);
  // Embedding lookup writes t·h; its backward scatter-adds dy into the gradient rows. Outside
  // shardplan's executor that is a dense gradient of the whole table, zeroed first (PyTorch's
  // embedding_dense_backward), which is then accumulated; by a hook where only the linear
  // layers' GEMMs add their own (Megatron-Core's DDP hook, main_grad.add_, for what
  // gradient_accumulation_fusion does not cover).
  b.part = Part::embedding;
  b.memory(MemoryKernel::embedding_forward, MemoryKernel::embedding_backward,
           as_double(tokens * m.hidden), 2 * e, 3 * e, false);
  if (x.grad_accumulation != GradAccumulation::in_place) {
    const GradAccumulation table = x.grad_accumulation == GradAccumulation::fused
                                       ? GradAccumulation::hook
                                       : x.grad_accumulation;
    b.accumulate_gradients(as_double(vocab * m.hidden), grad_add(table, t, l), e);
  }
  b.part = Part::head_norm;
  b.memory(MemoryKernel::norm_forward, MemoryKernel::norm_backward,
           as_double(r.region_tokens() * m.hidden), kNormForward * e, kNormBackward * e,
           false);  // final norm
  b.part = Part::head;
  b.gemm(tokens, m.hidden, vocab, false);  // LM head
  const CrossEntropyPasses ce = cross_entropy_passes(x.cross_entropy, b.elem_bytes);
  b.memory(MemoryKernel::cross_entropy_forward, MemoryKernel::cross_entropy_backward,
           as_double(tokens * vocab), ce.forward_bytes, ce.backward_bytes, false, ce.launches);
  return out;
}

MicrobatchCompute microbatch_compute(const Model& m, const Training& t, const Layout& l,
                                     const StageLayers& s, const DeviceRates& rates,
                                     const ExecutionOptions& x) {
  MicrobatchCompute out;
  // Every layer of a kind costs the same: build one of each kind, then scale.
  for (const auto& [moe, count] :
       {std::pair{false, s.dense_layers}, std::pair{true, s.moe_layers}}) {
    if (count == 0) continue;
    for (const MicrobatchCompute& part : layer_compute(m, t, l, moe, rates, x).parts)
      add_compute(out, part, count);
  }
  if (s.first || s.last) {
    const PartsCompute ends = ends_compute(m, t, l, rates, x);
    if (s.first) add_compute(out, ends[Part::embedding], 1);
    if (s.last)
      for (Part p : {Part::head_norm, Part::head}) add_compute(out, ends[p], 1);
  }
  return out;
}

double optimizer_step_bytes(const Training& t, int64_t elements) {
  const int64_t fp32 = dtype_bytes(Dtype::fp32);
  const int64_t e = dtype_bytes(t.dtype);
  const bool master = t.master_weights && e < fp32;
  const int64_t moments = t.optimizer == Optimizer::adam ? 2 * fp32 : 0;
  // Read and write the updated state (master or the weight itself, moments); write the
  // compute-dtype copy of a master weight; read the gradient twice (norm, update).
  const int64_t state = (master ? fp32 : e) + moments;
  const int64_t per_element = 2 * state + (master ? e : 0) + 2 * dtype_bytes(t.grad_dtype);
  return as_double(per_element) * as_double(elements);
}

double optimizer_step_time_s(const DeviceRates& r, const Training& t, int64_t elements) {
  return kernel_time_s(r, MemoryKernel::optimizer_step, as_double(elements),
                       optimizer_step_bytes(t, elements));
}

}  // namespace shardplan
