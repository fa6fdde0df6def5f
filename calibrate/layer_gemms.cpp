#include "calibrate/layer_gemms.h"

#include <cassert>
#include <cstdint>
#include <utility>

#include "executor/layers/block.h"
#include "executor/layers/lm_head.h"

namespace shardplan {

namespace {

// Addresses without memory: every block a distinct range that nothing reads or writes, since the
// kernels below touch none of them. A layer of a 70B model on 8-sequence micro-batches then costs
// nothing to record.
class AddressOnlyMemory final : public MemorySource {
 public:
  void* allocate(int64_t bytes) override {
    const uintptr_t p = next_;
    next_ += static_cast<uintptr_t>(bytes);
    return reinterpret_cast<void*>(p);
  }
  void release(void*) override {}
  void fill(void*, int64_t, unsigned char) override {}

 private:
  uintptr_t next_ = uintptr_t{1} << 20;  // aligned, and never null
};

// A tp group of `size` ranks whose collectives move nothing: the layers' GEMMs do not depend on
// the values the collectives would bring.
class SilentTpComm final : public TpComm<float> {
 public:
  explicit SilentTpComm(int size) : size_(size) {}
  int size() const override { return size_; }
  int rank() const override { return 0; }
  void all_reduce(std::span<float>, ReduceOp) override {}
  void all_gather(std::span<const float>, std::span<float>) override {}
  void reduce_scatter(std::span<const float>, std::span<float>) override {}

 private:
  int size_;
};

// Kernels that compute nothing: only the GEMMs' calls matter, and Kernels::gemm_batched records
// them before it calls run_gemm_batched. Attention batched as the device to be timed batches it.
class NoKernels final : public Kernels<float> {
 public:
  explicit NoKernels(HeadsPerCall heads_per_call) : heads_per_call_(std::move(heads_per_call)) {}
  void run_gemm_batched(MatrixRef<float>, MatrixRef<const float>, Op, MatrixRef<const float>, Op,
                        Accumulate, const GemmBatch&, MatmulStats*) override {}
  int64_t attention_heads_per_call(int64_t heads) const override { return heads_per_call_(heads); }
  void bias_forward(float*, const float*, int64_t, int64_t) override {}
  void residual_add(float*, const float*, const float*, int64_t, int64_t) override {}
  void bias_backward(const float*, int64_t, int64_t, float*) override {}
  void norm_forward(Norm, const float*, const float*, const float*, int64_t, int64_t,
                    float*) override {}
  void norm_backward(Norm, const float*, const float*, const float*, int64_t, int64_t, float*,
                     float*, float*) override {}
  void activation_forward(Activation, const float*, int64_t, int64_t, float*) override {}
  void activation_backward(Activation, const float*, const float*, int64_t, int64_t,
                           float*) override {}
  void causal_softmax_forward(float*, const ScoreBlocks&, C, TokenPositions) override {}
  void causal_softmax_backward(const float*, const ScoreBlocks&, float*, const ScoreBlocks&, C,
                               TokenPositions) override {}
  void embedding_rows(const int32_t*, int64_t, const float*, ElementRange, int64_t,
                      float*) override {}
  void embedding_rows_backward(const int32_t*, int64_t, const float*, ElementRange, int64_t,
                               float*) override {}
  void position_embedding_add(float*, int64_t, int64_t, const float*, TokenPositions,
                              int64_t) override {}
  void position_embedding_backward(const float*, int64_t, int64_t, float*, TokenPositions,
                                   int64_t) override {}
  void logits_row_max(const C*, int64_t, int64_t, C*) override {}
  void logits_target(const C*, const int32_t*, int64_t, int64_t, ElementRange, C*) override {}
  void logits_exponentiate(C*, int64_t, int64_t, const C*, C*) override {}
  double token_loss_sum(const C*, const C*, const C*, int64_t) override { return 0; }
  void logits_backward(C*, const C*, const int32_t*, int64_t, int64_t, ElementRange, C) override {}
  void adam_update(const AdamConfig&, float, float, float*, const float*, float*, float*, float*,
                   int64_t) override {}
  void widen(const float*, C*, int64_t) override {}
  void narrow(const C*, float*, int64_t) override {}
  void fill(MatrixRef<float>, float) override {}
  void copy(MatrixRef<float>, MatrixRef<const float>) override {}
  void copy_to_host(void*, const void*, int64_t) override {}
  void copy_from_host(void*, const void*, int64_t) override {}
  void synchronize() override {}

 private:
  HeadsPerCall heads_per_call_;
};

}  // namespace

LayerGemms record_layer_gemms(const LayerDims& d, int64_t vocab_rows,
                              const HeadsPerCall& heads_per_call) {
  assert(d.cp == 1 && "a cp rank's attention gathers its keys over the cp group");
  AddressOnlyMemory memory;
  TensorAllocator alloc("GEMM recording", 0, &memory);
  SilentTpComm tp(d.tp);
  NoKernels kernels(heads_per_call);
  LayerGemms out;
  MatmulStats stats{.calls = &out.layer};
  LayerContext<float> c{alloc, tp, &stats, nullptr, &kernels};
  // The weights, gradients, inputs and targets: one stand-in block, as nothing reads them.
  Buffer<float> stand_in = c.allocate(MemoryCategory::buffers, 1, "stand-in tensors");
  float* any = stand_in.data();
  const BlockTensors<const float*> w{.w_qkv = any, .w_o = any, .w_fc1 = any, .w_fc2 = any};
  const BlockTensors<float*> grad{.w_qkv = any, .w_o = any, .w_fc1 = any, .w_fc2 = any};
  const auto input = [&] {
    return c.allocate(MemoryCategory::activations, d.local_tokens() * d.hidden, "layer input");
  };

  BlockSaved<float> block;
  Buffer<float> y = block_forward(d, w, input(), Recompute::none, block, c);
  stats.calls = &out.head;
  const ElementRange vocab{0, vocab_rows};
  const auto* targets = reinterpret_cast<const int32_t*>(any);
  HeadSaved<float> head;
  head_forward(d, HeadTensors<const float*>{.vocab_weight = any}, vocab, std::move(y), targets,
               head, c);
  const Buffer<float> dy = head_backward(d, HeadTensors<const float*>{.vocab_weight = any},
                                         HeadTensors<float*>{.vocab_weight = any}, vocab, targets,
                                         std::move(head), 1.0f, c);
  stats.calls = &out.layer;
  block_backward(d, w, grad, std::move(block), dy.data(), c);
  return out;
}

}  // namespace shardplan
