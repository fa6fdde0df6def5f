// Every layer's backward pass against central finite differences of its forward pass, in double
// precision at small sizes. Tolerance: |analytic − numeric| ≤ 1e-7 for gradients of size up to ~10
// (the difference's own error is ~1e-10; see gradcheck.h), tight enough that any wrong term fails.
#include "gradcheck.h"

#include <catch2/catch.hpp>

#include "all_heads_cpu_kernels.h"
#include "executor/layers/activation.h"
#include "executor/layers/attention.h"
#include "executor/layers/embedding.h"
#include "executor/layers/linear.h"
#include "executor/layers/norm.h"
#include "test_models.h"
#include "tests/executor/chunk.h"

using namespace shardplan;
using test::check_gradient;
using test::dot;
using test::random_values;

namespace {

constexpr double kTolerance = 1e-7;

void require_close(const test::GradCheck& r, const char* what) {
  INFO(what << ": max |analytic - numeric| = " << r.max_error << " over " << r.checked
            << " elements, max |grad| = " << r.max_grad);
  CHECK(r.checked > 0);
  CHECK(r.max_grad > 1e-4);  // the check saw real gradients
  CHECK(r.max_error <= kTolerance);
}

// A single-rank context for double-precision layers.
struct DoubleRank {
  TensorAllocator alloc;
  DoubleRank() { alloc.set_poison_for_overwrite(true); }
  SingleRankTpComm<double> tp;
  LayerContext<double> ctx{alloc, tp, nullptr};
};

}  // namespace

TEST_CASE("gradient check: linear layer", "[executor]") {
  const int64_t n = 5, in = 4, out = 3;
  auto x = random_values(n * in, 1), w = random_values(out * in, 2), b = random_values(out, 3);
  const auto r = random_values(n * out, 4);
  const auto loss = [&] {
    std::vector<double> y(static_cast<size_t>(n * out));
    linear_forward(cpu_kernels<double>(), "linear", x.data(), w.data(), b.data(), n, in, out,
                   y.data(), nullptr);
    return dot(y, r);
  };
  std::vector<double> dx(x.size()), dw(w.size()), db(b.size());
  linear_backward(cpu_kernels<double>(), "linear", x.data(), w.data(), r.data(), n, in, out,
                  dx.data(), dw.data(), db.data(), nullptr);
  require_close(check_gradient(x, dx, loss), "dx");
  require_close(check_gradient(w, dw, loss), "dw");
  require_close(check_gradient(b, db, loss), "db");
}

TEST_CASE("gradient check: layernorm and rmsnorm", "[executor]") {
  for (Norm kind : {Norm::layernorm, Norm::rmsnorm}) {
    INFO(enum_name(kind, kNormNames));
    const int64_t rows = 3, h = 6;
    auto x = random_values(rows * h, 5, 2.0), w = random_values(h, 6), b = random_values(h, 7);
    for (double& v : x) v += 1.5;  // a mean LayerNorm must remove
    const auto r = random_values(rows * h, 8);
    const double* bias = kind == Norm::layernorm ? b.data() : nullptr;
    std::vector<double> y(x.size());
    const auto loss = [&] {
      norm_forward(kind, x.data(), w.data(), bias, rows, h, y.data());
      return dot(y, r);
    };
    loss();
    std::vector<double> dx(x.size()), dw(w.size()), db(b.size());
    norm_backward(kind, x.data(), w.data(), r.data(), rows, h, dx.data(), dw.data(),
                  kind == Norm::layernorm ? db.data() : nullptr);
    require_close(check_gradient(x, dx, loss), "dx");
    require_close(check_gradient(w, dw, loss), "dweight");
    if (kind == Norm::layernorm) require_close(check_gradient(b, db, loss), "dbias");
  }
}

TEST_CASE("gradient check: gelu and swiglu activations", "[executor]") {
  for (Activation kind : {Activation::gelu, Activation::swiglu}) {
    INFO(enum_name(kind, kActivationNames));
    const int64_t rows = 3, ffn = 5, width = kind == Activation::swiglu ? 2 * ffn : ffn;
    auto u = random_values(rows * width, 9, 2.0);
    const auto r = random_values(rows * ffn, 10);
    const auto loss = [&] {
      std::vector<double> a(static_cast<size_t>(rows * ffn));
      activation_forward(kind, u.data(), rows, ffn, a.data());
      return dot(a, r);
    };
    std::vector<double> du(u.size());
    activation_backward(kind, u.data(), r.data(), rows, ffn, du.data());
    require_close(check_gradient(u, du, loss), "du");
  }
}

TEST_CASE("gradient check: causal attention with grouped kv heads", "[executor]") {
  // One head a call (the CPU backend's) and every kv group in one batched call (a GPU's).
  CpuKernels<double> one_head;
  test::AllHeadsCpuKernels<double> all_heads;
  for (Kernels<double>* dev :
       {static_cast<Kernels<double>*>(&one_head), static_cast<Kernels<double>*>(&all_heads)}) {
    const LayerDims d{.batch = 2, .seq = 5, .heads = 4, .kv_heads = 2, .head_dim = 3};
    INFO("heads per call: " << dev->attention_heads_per_call(d.kv_heads));
    auto qkv = random_values(d.tokens() * d.qkv_width(), 11);
    const auto r = random_values(d.tokens() * d.heads * d.head_dim, 12);
    std::vector<double> probs(static_cast<size_t>(attention_probs_count(d)));
    const auto loss = [&] {
      std::vector<double> ctx(r.size());
      const KeyValues<const double*> kv = qkv_key_values<const double*>(d, qkv.data());
      attention_forward(*dev, d, qkv.data(), kv, probs.data(), ctx.data(), nullptr);
      return dot(ctx, r);
    };
    loss();
    // Causal: the first token attends to itself only.
    CHECK(probs[0] == 1.0);
    CHECK(probs[1] == 0.0);
    std::vector<double> dqkv(qkv.size()),
        scratch(static_cast<size_t>(attention_scratch_count(*dev, d)));
    attention_backward(*dev, d, qkv.data(), qkv_key_values<const double*>(d, qkv.data()),
                       probs.data(), r.data(), dqkv.data(), qkv_key_values(d, dqkv.data()),
                       scratch.data(), nullptr);
    require_close(check_gradient(qkv, dqkv, loss, 1000), "dqkv");
  }
}

TEST_CASE("gradient check: token and position embedding", "[executor]") {
  DoubleRank rank;
  const Model m = test::gpt2_like();
  const LayerDims d = layer_dims(m, whole_model(m), 2, 4, false);
  auto wte = random_values(m.vocab * m.hidden, 13), wpe = random_values(m.max_seq * m.hidden, 14);
  std::vector<int32_t> tokens = {5, 7, 5, 200, 1, 7, 255, 0};
  const auto r = random_values(d.tokens() * m.hidden, 15);
  const ElementRange vocab{0, m.vocab};
  const auto loss = [&] {
    Buffer<double> out =
        embedding_forward(d, tokens.data(), wte.data(), vocab, wpe.data(), rank.ctx);
    return dot(out.span(), r);
  };
  std::vector<double> dwte(wte.size()), dwpe(wpe.size());
  embedding_backward(d, tokens.data(), r.data(), vocab, dwte.data(), dwpe.data(), rank.ctx);
  // The rows of token 5 and of token 7 (each used twice) and position 0..3.
  require_close(check_gradient(std::span(wte).subspan(5 * 32, 96),
                               std::span<const double>(dwte).subspan(5 * 32, 96), loss),
                "dwte");
  require_close(check_gradient(std::span(wpe).subspan(0, 128),
                               std::span<const double>(dwpe).subspan(0, 128), loss),
                "dwpe");
}

TEST_CASE("gradient check: transformer layer under each recompute mode", "[executor]") {
  for (const Model& m : {test::gpt2_like(1), test::llama_like(1)}) {
    for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      INFO(m.name << ", recompute " << enum_name(mode, kRecomputeNames));
      DoubleRank rank;
      const RankShard shard = whole_model(m);
      const ParamLayout layout = param_layout(m, shard);
      const LayerDims d = layer_dims(m, shard, 2, 5, false);
      auto params = random_values(layout.total, 16, 0.3);
      auto x = random_values(d.tokens() * m.hidden, 17);
      const auto r = random_values(d.tokens() * m.hidden, 18);
      const auto w = block_tensors<const double>(layout, 0, params.data());
      const auto loss = [&] {
        Buffer<double> in =
            rank.alloc.allocate<double>(MemoryCategory::activations, d.tokens() * m.hidden, "x");
        std::copy(x.begin(), x.end(), in.data());
        BlockSaved<double> saved;
        Buffer<double> y = block_forward(d, w, std::move(in), mode, saved, rank.ctx);
        return dot(y.span(), r);
      };
      Buffer<double> in =
          rank.alloc.allocate<double>(MemoryCategory::activations, d.tokens() * m.hidden, "x");
      std::copy(x.begin(), x.end(), in.data());
      BlockSaved<double> saved;
      Buffer<double> y = block_forward(d, w, std::move(in), mode, saved, rank.ctx);
      std::vector<double> grads(params.size());
      Buffer<double> dx = block_backward(d, w, block_tensors(layout, 0, grads.data()),
                                         std::move(saved), r.data(), rank.ctx);
      require_close(check_gradient(x, dx.span(), loss), "dx");
      const ElementRange lr = layout.layer_range(0);
      require_close(
          check_gradient(std::span(params).subspan(lr.begin, lr.count()),
                         std::span<const double>(grads).subspan(lr.begin, lr.count()), loss, 200),
          "layer parameters");
    }
  }
}

TEST_CASE("gradient check: whole model with head and cross-entropy", "[executor]") {
  for (const Model& m : {test::gpt2_like(2), test::llama_like(2)}) {
    INFO(m.name);
    DoubleRank rank;
    const RankShard shard = whole_model(m);
    const ParamLayout layout = param_layout(m, shard);
    const ModelChunk chunk = whole_model_chunk(m);
    const LayerDims d = layer_dims(m, shard, 2, 6, false);
    auto params = random_values(layout.total, 19, 0.3);
    std::vector<int32_t> inputs(12), targets(12);
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputs[i] = static_cast<int32_t>((37 * i + 11) % 256);
      targets[i] = static_cast<int32_t>((53 * i + 3) % 256);
    }
    const MicroBatchTokens tokens{inputs.data(), targets.data()};
    const double scale = 1.0 / 12;
    const auto loss = [&] {
      ChunkSaved<double> saved;
      return scale * chunk_forward(chunk, layout, params.data(), d, tokens, {}, Recompute::none,
                                   saved, rank.ctx)
                         .loss_sum;
    };
    ChunkSaved<double> saved;
    chunk_forward(chunk, layout, params.data(), d, tokens, {}, Recompute::none, saved, rank.ctx);
    std::vector<double> grads(params.size());
    chunk_backward<double>(chunk, layout, params.data(), grads.data(), d, tokens, std::move(saved),
                           nullptr, scale, rank.ctx);
    for (const ParamTensor& t : layout.tensors) {
      INFO(t.name);
      const auto g = std::span<const double>(grads).subspan(t.offset, t.count());
      if (t.name.ends_with("attn.bk")) {
        // The key bias adds q·bk to every score of a row, which softmax ignores: its gradient is 0.
        CHECK(std::all_of(g.begin(), g.end(), [](double v) { return std::abs(v) < 1e-14; }));
        continue;
      }
      require_close(check_gradient(std::span(params).subspan(t.offset, t.count()), g, loss, 10),
                    "model parameters");
    }
  }
}
