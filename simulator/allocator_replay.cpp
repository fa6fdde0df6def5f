#include "simulator/allocator_replay.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <vector>

#include "core/schedule.h"
#include "simulator/activation_memory.h"
#include "simulator/caching_allocator.h"
#include "simulator/rank_shape.h"

namespace shardplan {

namespace {

using Handle = CachingAllocator::Handle;

Layout replayed_layout(const Layout& l) {
  Layout out = l;
  out.num_microbatches = replayed_microbatches(l);
  return out;
}

// `bytes` in `parts` blocks as equal as whole bytes allow.
std::vector<int64_t> split(int64_t bytes, int64_t parts) {
  std::vector<int64_t> out;
  if (bytes <= 0) return out;
  parts = std::max<int64_t>(1, parts);
  for (int64_t i = 0; i < parts; ++i) out.push_back(bytes / parts + (i < bytes % parts ? 1 : 0));
  return out;
}

class Replay {
 public:
  Replay(const Model& m, const Training& t, const Layout& l, const StageLayers& s,
         const RankMemory& r, const ExecutionOptions& x)
      : m_(m),
        t_(t),
        l_(replayed_layout(l)),
        s_(s),
        r_(r),
        x_(x),
        shape_(rank_shape(t, l)),
        e_(dtype_bytes(t.dtype)),
        a_(x.expandable_segments) {
    a_.set_limit(r.capacity_bytes - r.runtime_reserved_bytes);
    const ParamShard p = param_shard(m, l, s);
    const int64_t ends = p.embedding + p.head;
    // The state items in blocks as PyTorch holds them: a block per layer and per end of the model
    // (the parameters, and the optimizer's per-parameter moments), one flat buffer for the
    // gradients and the master copy (Megatron-LM's and nanotron's contiguous buffers).
    end_share_ = p.total() > 0 ? static_cast<double>(ends) / static_cast<double>(p.total()) : 0;
    for (int c = 0; c < l_.vpp; ++c) {
      const LayerRange chunk = virtual_stage_layers(m, l, virtual_stage(l, s.stage, c));
      layers_per_chunk_.push_back(chunk.end - chunk.begin);
    }
    const LayerTensors dense =
        layer_activation_tensors(m, t.dtype, shape_, false, l.recompute, x, t.fp8);
    const LayerTensors moe =
        layer_activation_tensors(m, t.dtype, shape_, true, l.recompute, x, t.fp8);
    const bool moe_stage = s.moe_layers > s.dense_layers;
    layer_ = moe_stage ? moe : dense;
    whole_layer_ = layer_activation_bytes(m, t.dtype, shape_, moe_stage, Recompute::none, x, t.fp8);
    backward_ = layer_backward_buffers(m, t.dtype, shape_, moe_stage);
    if (split_) weight_grad_ = layer_weight_grad_tensors(m, t.dtype, shape_, moe_stage, t.fp8);
  }

  AllocatorPeaks run() {
    for (int64_t b : state_blocks(r_.state.parameters)) a_.allocate(b);
    // TE's FP8 weight copies, made by the first forward and kept (placed with the parameters:
    // nothing is freed before them that they could take the place of).
    for (int64_t b : state_blocks(r_.state.fp8_weights)) a_.allocate(b);
    if (r_.state.master_weights > 0) a_.allocate(r_.state.master_weights);
    // DeepSpeed's optimizers make their moments when they are built (initialize_optimizer_states:
    // a step on zero fp32 gradients), two flat tensors over the partition, before any gradient or
    // activation exists.
    if (copy_.fp32 > 0) {
      const Handle zeros = a_.allocate(copy_.fp32);
      a_.allocate(r_.state.optimizer_moments / 2);
      a_.allocate(r_.state.optimizer_moments / 2);
      a_.release(zeros);
    }
    allocate_gradients();
    for (int64_t b : {r_.comm_buffer_bytes, r_.zero3_gathered_bytes, r_.sp_gather_buffer_bytes})
      if (b > 0) a_.allocate(b);
    // DDP's buckets of the compute-dtype gradients (bucket_cap_mb: the framework's
    // grad_bucket_elements, 25 MiB of bf16 in nanotron).
    const int64_t bucket_bytes = grad_bucket_params(t_, l_) * dtype_bytes(t_.dtype);
    for (int64_t b : split(r_.grad_bucket_copy_bytes,
                           (r_.grad_bucket_copy_bytes + bucket_bytes - 1) / bucket_bytes))
      a_.allocate(b);
    for (int step = 0; step < 2; ++step) {
      for (const PipelineStep& p : pipeline_order(l_, s_.stage)) {
        if (p.pass == Pass::forward) forward(p);
        if (p.pass == Pass::backward) backward(p);
        if (p.pass == Pass::backward || p.pass == Pass::weight_grad) release(p);
        // Under a split backward what the layers' W read stays until then.
        if (p.pass == Pass::backward && split_) hold_for_weight_grad(p);
      }
      reduce_bucket();
      optimizer_step(step);
      param_gather();
    }
    return {a_.peak_allocated_bytes(), a_.peak_reserved_bytes()};
  }

 private:
  std::vector<int64_t> state_blocks(int64_t bytes) const {
    const auto ends = static_cast<int64_t>(end_share_ * static_cast<double>(bytes));
    std::vector<int64_t> out = split(bytes - ends, s_.layers());
    if (ends > 0) out.push_back(ends);
    return out;
  }

  // The gradients: one flat buffer (Megatron-LM's and nanotron's contiguous buffers, DeepSpeed
  // ZeRO-2's partition), or, where DeepSpeed's ZeRO-0/1 step frees autograd's gradients, a block
  // per layer and end as their .grad tensors are held.
  void allocate_gradients() {
    if (r_.state.gradients == 0) return;
    const std::vector<int64_t> blocks =
        step_frees_gradients_ ? state_blocks(r_.state.gradients) : split(r_.state.gradients, 1);
    for (int64_t b : blocks) gradients_.push_back({a_.allocate(b), b});
  }

  // PyTorch's optimizers create the Adam moments at their first step, while the gradients exist.
  // A step that copies the gradients to fp32 (memory_model.h: step_grad_copy) frees those outside
  // the rank's partition (ZeRO-1), makes the intermediate and the fp32 copy, frees the
  // intermediate and autograd's gradients (ZeRO-0/1), and frees the fp32 copy when it ends; the
  // next backward makes the gradients again, in the blocks they left.
  void optimizer_step(int step) {
    if (copy_.fp32 == 0) {
      if (step == 0)
        for (int64_t b : state_blocks(r_.state.optimizer_moments / 2)) {
          a_.allocate(b);
          a_.allocate(b);
        }
      return;
    }
    if (step_frees_gradients_) {
      // The partition is a contiguous share of the flattened parameters: keep the last blocks.
      int64_t kept = 0;
      size_t first_kept = gradients_.size();
      while (first_kept > 0 && kept < copy_.partition_gradients)
        kept += gradients_[--first_kept].bytes;
      for (size_t i = 0; i < first_kept; ++i) a_.release(gradients_[i].handle);
      gradients_.erase(gradients_.begin(), gradients_.begin() + static_cast<ptrdiff_t>(first_kept));
    }
    // FP16_Optimizer (ZeRO-0) casts each gradient; the ZeRO optimizer makes one flat copy.
    std::vector<Handle> intermediate;
    for (int64_t b : l_.zero == 0 ? state_blocks(copy_.intermediate) : split(copy_.intermediate, 1))
      intermediate.push_back(a_.allocate(b));
    const Handle fp32 = a_.allocate(copy_.fp32);
    for (Handle h : intermediate) a_.release(h);
    if (step_frees_gradients_) {
      for (const HeldBlock& g : gradients_) a_.release(g.handle);
      gradients_.clear();
    }
    a_.release(fp32);
    if (step_frees_gradients_) allocate_gradients();
  }

  // The reduction's bucket (memory_model.h: pipeline_reduce_bucket_bytes), larger than the blocks
  // the activations left cached, made after the last backward and freed when the reduction ends,
  // before the step.
  void reduce_bucket() {
    if (bucket_ > 0) a_.release(a_.allocate(bucket_));
  }

  // A gather that flattens (memory_model.h: param_gather_copy) asks for blocks as large as a
  // share of the parameters, which the activations' cached blocks rarely hold: the input shard,
  // then an output per member, all freed when it returns.
  void param_gather() {
    if (gather_.outputs == 0) return;
    std::vector<Handle> copies{a_.allocate(gather_.input)};
    for (int64_t b : split(gather_.outputs, gather_.members)) copies.push_back(a_.allocate(b));
    for (Handle h : copies) a_.release(h);
  }

  bool holds_loss(const PipelineStep& p) const { return s_.last && p.chunk == l_.vpp - 1; }

  void forward(const PipelineStep& p) {
    std::vector<Handle>& kept = kept_[key(p)];
    const int64_t hidden = e_ * shape_.tokens() * m_.hidden;
    if (s_.first && p.chunk == 0 && r_.embedding_activations_bytes > 0)
      kept.push_back(a_.allocate(r_.embedding_activations_bytes / r_.inflight_microbatches));
    for (int layer = 0; layer < layers_per_chunk_[static_cast<size_t>(p.chunk)]; ++layer) {
      for (int i = 0; i < layer_.count; ++i)
        kept.push_back(a_.allocate(layer_.bytes[static_cast<size_t>(i)]));
      // The projection's output before the residual add (whole before a reduce-scatter).
      a_.release(a_.allocate(hidden));
    }
    if (!holds_loss(p)) return;
    for (int64_t b : split(output_layer_activation_bytes(m_, t_.dtype, shape_), 2))
      kept.push_back(a_.allocate(b));
    const LossMemory loss = loss_memory(m_, t_.dtype, shape_, x_.cross_entropy);
    const Handle logits = a_.allocate(loss.transient - extra_copy(loss));
    const Handle copy = extra_copy(loss) > 0 ? a_.allocate(extra_copy(loss)) : -1;
    kept.push_back(a_.allocate(loss.saved));
    if (copy >= 0) a_.release(copy);
    a_.release(logits);
  }

  void backward(const PipelineStep& p) {
    if (holds_loss(p)) {
      const LossMemory loss = loss_memory(m_, t_.dtype, shape_, x_.cross_entropy);
      a_.release(a_.allocate(loss.transient - extra_copy(loss)));  // the logits' gradient
    }
    for (int layer = 0; layer < layers_per_chunk_[static_cast<size_t>(p.chunk)]; ++layer) {
      const Handle recomputed =
          l_.recompute != Recompute::none
              ? a_.allocate(std::max<int64_t>(whole_layer_ - layer_.total(), 0))
              : -1;
      std::array<Handle, 3> gradients{};  // layer_backward_buffers': in, the MLP's, the input's
      assert(backward_.count == static_cast<int>(gradients.size()));
      for (size_t i = 0; i < gradients.size(); ++i) gradients[i] = a_.allocate(backward_.bytes[i]);
      a_.release(gradients[1]);
      if (recomputed >= 0) a_.release(recomputed);
      a_.release(gradients[0]);
      a_.release(gradients[2]);
    }
  }

  void hold_for_weight_grad(const PipelineStep& p) {
    std::vector<Handle>& kept = kept_[key(p)];
    for (int layer = 0; layer < layers_per_chunk_[static_cast<size_t>(p.chunk)]; ++layer)
      for (int i = 0; i < weight_grad_.count; ++i)
        kept.push_back(a_.allocate(weight_grad_.bytes[static_cast<size_t>(i)]));
  }

  void release(const PipelineStep& p) {
    std::vector<Handle>& kept = kept_[key(p)];
    for (Handle h : kept) a_.release(h);
    kept.clear();
  }

  int64_t extra_copy(const LossMemory& loss) const {
    return std::max<int64_t>(
        0, loss.transient - e_ * shape_.tokens() * shard_size(m_.vocab, shape_.tp));
  }
  size_t key(const PipelineStep& p) const {
    return static_cast<size_t>(p.micro_batch) * static_cast<size_t>(l_.vpp) +
           static_cast<size_t>(p.chunk);
  }

  const Model& m_;
  const Training& t_;
  const Layout l_;
  const StageLayers& s_;
  const RankMemory& r_;
  const ExecutionOptions& x_;
  const bool split_ = splits_backward(l_.schedule);
  const StepGradCopy copy_ = step_grad_copy(t_, l_, r_.state, x_);
  const int64_t bucket_ = pipeline_reduce_bucket_bytes(t_, l_, x_);
  const ParamGatherCopy gather_ = param_gather_copy(l_, r_.state, x_);
  // DeepSpeed's ZeRO-0/1 step frees autograd's gradients (ZeRO-2 keeps its partition buffer).
  const bool step_frees_gradients_ = copy_.fp32 > 0 && l_.zero <= 1;
  struct HeldBlock {
    Handle handle;
    int64_t bytes;
  };
  std::vector<HeldBlock> gradients_;
  const RankShape shape_;
  const int64_t e_;
  double end_share_ = 0;
  std::vector<int> layers_per_chunk_;
  LayerTensors layer_;
  LayerTensors backward_;     // layer_backward_buffers'
  LayerTensors weight_grad_;  // held from B to W (split backward)
  int64_t whole_layer_ = 0;
  CachingAllocator a_;
  std::vector<std::vector<Handle>> kept_ =
      std::vector<std::vector<Handle>>(static_cast<size_t>(l_.num_microbatches * l_.vpp));
};

// ZB-V's first stage starts the most micro-batches before its first W: its order, walked.
int v_forwards_before_first_weight_grad(const Layout& l) {
  int started = 0;
  for (const PipelineStep& p : pipeline_order(l, 0)) {
    if (p.pass == Pass::weight_grad) break;
    if (p.pass == Pass::forward && p.chunk == 0) ++started;
  }
  return started;
}

}  // namespace

int replayed_microbatches(const Layout& l) {
  // A zero-bubble first stage runs the most forwards before its first W (core/schedule.h).
  int needed = l.schedule == Schedule::gpipe ? l.num_microbatches
               : v_placement(l.schedule)     ? v_forwards_before_first_weight_grad(l) + 1
               : splits_backward(l.schedule)
                   ? forwards_before_first_weight_grad(zero_bubble_phases(l, 0)) + 1
                   : l.pp + 1;
  if (l.schedule == Schedule::interleaved) needed = (needed + l.pp - 1) / l.pp * l.pp;
  return std::min(l.num_microbatches, needed);
}

AllocatorPeaks replay_allocations(const Model& m, const Training& t, const Layout& l,
                                  const StageLayers& s, const RankMemory& r,
                                  const ExecutionOptions& x) {
  return Replay(m, t, l, s, r, x).run();
}

void add_allocator_cache(std::vector<RankMemory>& stages, const Model& m, const Training& t,
                         const Layout& l, const ExecutionOptions& x) {
  for (RankMemory& r : stages) {
    const AllocatorPeaks p = replay_allocations(m, t, l, stage_layers(m, l, r.stage), r, x);
    r.allocator_cache_bytes = std::max<int64_t>(0, p.reserved - p.allocated);
  }
}

}  // namespace shardplan
