// Every CUDA kernel against the CPU backend's host loop on the same random inputs (gemm batched
// and not, each op and accumulation; the layers' kernels; cross-entropy; Adam; strided fills and
// copies). Tolerance: max |gpu − cpu| ≤ 1e-5 × max |cpu| per output (fp32 sums in another order;
// cuBLAS without TF32), 1e-4 for the GEMMs' longer sums. Skipped without a CUDA device.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cuda_test_device.h"
#include "executor/counter_rng.h"
#include "executor/cpu_kernels.h"

namespace shardplan {
namespace {

constexpr double kTolerance = 1e-5;
constexpr double kGemmTolerance = 1e-4;

std::vector<float> random_values(int64_t n, uint64_t seed, double scale = 1.0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(scale * counter_normal(seed, 1, i));
  return v;
}

// One array twice: on the host for the CPU kernels, on the GPU for the CUDA kernels.
template <class T>
struct Twin {
  std::vector<T> host;
  Buffer<T> device;

  Twin(test::CudaRank& rank, std::vector<T> values) : host(std::move(values)) {
    device = rank.alloc.allocate<T>(MemoryCategory::buffers, static_cast<int64_t>(host.size()),
                                    "test array");
    rank.kernels.copy_from_host(device.data(), host.data(),
                                static_cast<int64_t>(host.size() * sizeof(T)));
  }
  T* cpu() { return host.data(); }
  T* gpu() { return device.data(); }
  // max |gpu − cpu| / max |cpu|.
  double error(test::CudaRank& rank) {
    std::vector<T> got(host.size());
    rank.kernels.copy_to_host(got.data(), device.data(),
                              static_cast<int64_t>(got.size() * sizeof(T)));
    double err = 0, scale = 1e-30;
    for (size_t i = 0; i < got.size(); ++i) {
      err = std::max(err, std::abs(static_cast<double>(got[i]) - static_cast<double>(host[i])));
      scale = std::max(scale, std::abs(static_cast<double>(host[i])));
    }
    return err / scale;
  }
};

std::vector<int32_t> tokens(int64_t n, int32_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(vocab));
  return t;
}

TEST_CASE("cuda kernels: gemm, every op and accumulation, batched with strides", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  const int64_t m = 37, n = 29, k = 41, count = 3;
  for (Op op_a : {Op::none, Op::transpose})
    for (Op op_b : {Op::none, Op::transpose})
      for (Accumulate acc : {Accumulate::overwrite, Accumulate::add}) {
        // Strided operands inside wider rows, as attention's heads are.
        const int64_t a_rows = op_a == Op::none ? m : k, a_cols = op_a == Op::none ? k : m;
        const int64_t b_rows = op_b == Op::none ? k : n, b_cols = op_b == Op::none ? n : k;
        const int64_t lda = a_cols + 5, ldb = b_cols + 3, ldc = n + 7;
        const GemmBatch batch{count, a_rows * lda, b_rows * ldb, m * ldc};
        Twin<float> a(rank, random_values(count * a_rows * lda, 1)),
            b(rank, random_values(count * b_rows * ldb, 2)),
            c(rank, random_values(count * m * ldc, 3));
        for (Kernels<float>* dev :
             {static_cast<Kernels<float>*>(&cpu), static_cast<Kernels<float>*>(&rank.kernels)}) {
          const bool on_gpu = dev == &rank.kernels;
          dev->gemm_batched(matrix(on_gpu ? c.gpu() : c.cpu(), m, n, ldc),
                            matrix<const float>(on_gpu ? a.gpu() : a.cpu(), a_rows, a_cols, lda),
                            op_a,
                            matrix<const float>(on_gpu ? b.gpu() : b.cpu(), b_rows, b_cols, ldb),
                            op_b, acc, batch, nullptr);
        }
        INFO("op_a " << int(op_a) << " op_b " << int(op_b) << " acc " << int(acc));
        CHECK(c.error(rank) < kGemmTolerance);
      }
}

TEST_CASE("cuda kernels: bias, residual, bias gradient", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  const int64_t rows = 300, cols = 70;
  Twin<float> y(rank, random_values(rows * cols, 1)), x(rank, random_values(rows * cols, 2)),
      b(rank, random_values(cols, 3)), db(rank, random_values(cols, 4));
  cpu.bias_forward(y.cpu(), b.cpu(), rows, cols);
  rank.kernels.bias_forward(y.gpu(), b.gpu(), rows, cols);
  cpu.residual_add(y.cpu(), x.cpu(), b.cpu(), rows, cols);
  rank.kernels.residual_add(y.gpu(), x.gpu(), b.gpu(), rows, cols);
  cpu.residual_add(y.cpu(), x.cpu(), nullptr, rows, cols);
  rank.kernels.residual_add(y.gpu(), x.gpu(), nullptr, rows, cols);
  CHECK(y.error(rank) < kTolerance);
  cpu.bias_backward(x.cpu(), rows, cols, db.cpu());
  rank.kernels.bias_backward(x.gpu(), rows, cols, db.gpu());
  CHECK(db.error(rank) < kTolerance);
}

TEST_CASE("cuda kernels: layernorm and rmsnorm, forward and backward", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  const int64_t rows = 50, hidden = 600;  // wider than a block: the row loops stride
  for (Norm kind : {Norm::layernorm, Norm::rmsnorm}) {
    INFO(enum_name(kind, kNormNames));
    std::vector<float> xs = random_values(rows * hidden, 1, 2.0);
    for (float& v : xs) v += 1.5f;
    Twin<float> x(rank, xs), w(rank, random_values(hidden, 2)), b(rank, random_values(hidden, 3)),
        y(rank, std::vector<float>(xs.size())), dy(rank, random_values(rows * hidden, 4)),
        dx(rank, random_values(rows * hidden, 5)), dw(rank, random_values(hidden, 6)),
        db(rank, random_values(hidden, 7));
    const bool ln = kind == Norm::layernorm;
    cpu.norm_forward(kind, x.cpu(), w.cpu(), ln ? b.cpu() : nullptr, rows, hidden, y.cpu());
    rank.kernels.norm_forward(kind, x.gpu(), w.gpu(), ln ? b.gpu() : nullptr, rows, hidden,
                              y.gpu());
    CHECK(y.error(rank) < kTolerance);
    cpu.norm_backward(kind, x.cpu(), w.cpu(), dy.cpu(), rows, hidden, dx.cpu(), dw.cpu(),
                      ln ? db.cpu() : nullptr);
    rank.kernels.norm_backward(kind, x.gpu(), w.gpu(), dy.gpu(), rows, hidden, dx.gpu(), dw.gpu(),
                               ln ? db.gpu() : nullptr);
    CHECK(dx.error(rank) < kTolerance);
    CHECK(dw.error(rank) < kTolerance);
    CHECK(db.error(rank) < kTolerance);
  }
}

TEST_CASE("cuda kernels: gelu and swiglu, forward and backward", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  const int64_t rows = 40, ffn = 90;
  for (Activation kind : {Activation::gelu, Activation::swiglu}) {
    INFO(enum_name(kind, kActivationNames));
    const int64_t width = kind == Activation::swiglu ? 2 * ffn : ffn;
    Twin<float> u(rank, random_values(rows * width, 1, 2.0)),
        a(rank, std::vector<float>(static_cast<size_t>(rows * ffn))),
        da(rank, random_values(rows * ffn, 2)), du(rank, std::vector<float>(u.host.size()));
    cpu.activation_forward(kind, u.cpu(), rows, ffn, a.cpu());
    rank.kernels.activation_forward(kind, u.gpu(), rows, ffn, a.gpu());
    CHECK(a.error(rank) < kTolerance);
    cpu.activation_backward(kind, u.cpu(), da.cpu(), rows, ffn, du.cpu());
    rank.kernels.activation_backward(kind, u.gpu(), da.gpu(), rows, ffn, du.gpu());
    CHECK(du.error(rank) < kTolerance);
  }
}

TEST_CASE("cuda kernels: causal softmax over score blocks, with cp positions", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  // cp = 2, rank 1 of it: 8 query rows against 16 keys, blocks 2·8·16 apart (every other head).
  const TokenPositions positions{8, 2, 1};
  const int64_t rows = 8, cols = 16, count = 3, stride = 2 * rows * cols;
  const ScoreBlocks probs_blocks{count, stride, rows, cols},
      grad_blocks{count, rows * cols, rows, cols};
  Twin<float> scores(rank, random_values(count * stride, 1, 3.0)),
      grads(rank, random_values(count * rows * cols, 2));
  cpu.causal_softmax_forward(scores.cpu(), probs_blocks, 0.25f, positions);
  rank.kernels.causal_softmax_forward(scores.gpu(), probs_blocks, 0.25f, positions);
  CHECK(scores.error(rank) < kTolerance);
  cpu.causal_softmax_backward(scores.cpu(), probs_blocks, grads.cpu(), grad_blocks, 0.25f,
                              positions);
  rank.kernels.causal_softmax_backward(scores.gpu(), probs_blocks, grads.gpu(), grad_blocks, 0.25f,
                                       positions);
  CHECK(grads.error(rank) < kTolerance);
}

TEST_CASE("cuda kernels: embedding rows and positions, forward and backward", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  const int64_t count = 64, hidden = 48, vocab = 256;
  const ElementRange mine{64, 192};  // a tp rank's rows: other tokens are not its
  const TokenPositions positions{16, 2, 0};
  Twin<int32_t> ids(rank, tokens(count, static_cast<int32_t>(vocab)));
  Twin<float> table(rank, random_values(mine.count() * hidden, 1)),
      out(rank, std::vector<float>(static_cast<size_t>(count * hidden))),
      wpe(rank, random_values(2 * positions.seq * hidden, 2)),
      dout(rank, random_values(count * hidden, 3)),
      dtable(rank, random_values(mine.count() * hidden, 4)),
      dwpe(rank, random_values(2 * positions.seq * hidden, 5));
  cpu.embedding_rows(ids.cpu(), count, table.cpu(), mine, hidden, out.cpu());
  rank.kernels.embedding_rows(ids.gpu(), count, table.gpu(), mine, hidden, out.gpu());
  cpu.position_embedding_add(out.cpu(), count, hidden, wpe.cpu(), positions, 5);
  rank.kernels.position_embedding_add(out.gpu(), count, hidden, wpe.gpu(), positions, 5);
  CHECK(out.error(rank) < kTolerance);
  cpu.embedding_rows_backward(ids.cpu(), count, dout.cpu(), mine, hidden, dtable.cpu());
  rank.kernels.embedding_rows_backward(ids.gpu(), count, dout.gpu(), mine, hidden, dtable.gpu());
  CHECK(dtable.error(rank) < kTolerance);
  cpu.position_embedding_backward(dout.cpu(), count, hidden, dwpe.cpu(), positions, 5);
  rank.kernels.position_embedding_backward(dout.gpu(), count, hidden, dwpe.gpu(), positions, 5);
  CHECK(dwpe.error(rank) < kTolerance);
}

TEST_CASE("cuda kernels: vocabulary-parallel cross-entropy pieces and loss", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  const int64_t rows = 33, cols = 500;
  const ElementRange vocab{500, 1000};
  Twin<int32_t> targets(rank, tokens(rows, 1000));
  Twin<float> logits(rank, random_values(rows * cols, 1, 4.0)),
      row_max(rank, std::vector<float>(rows)), target(rank, std::vector<float>(rows)),
      sum_exp(rank, std::vector<float>(rows));
  cpu.logits_row_max(logits.cpu(), rows, cols, row_max.cpu());
  rank.kernels.logits_row_max(logits.gpu(), rows, cols, row_max.gpu());
  CHECK(row_max.error(rank) == 0);
  cpu.logits_target(logits.cpu(), targets.cpu(), rows, cols, vocab, target.cpu());
  rank.kernels.logits_target(logits.gpu(), targets.gpu(), rows, cols, vocab, target.gpu());
  CHECK(target.error(rank) == 0);
  cpu.logits_exponentiate(logits.cpu(), rows, cols, row_max.cpu(), sum_exp.cpu());
  rank.kernels.logits_exponentiate(logits.gpu(), rows, cols, row_max.gpu(), sum_exp.gpu());
  CHECK(logits.error(rank) < kTolerance);
  CHECK(sum_exp.error(rank) < kTolerance);
  const double want = cpu.token_loss_sum(row_max.cpu(), sum_exp.cpu(), target.cpu(), rows);
  const double got = rank.kernels.token_loss_sum(row_max.gpu(), sum_exp.gpu(), target.gpu(), rows);
  CHECK(std::abs(got - want) <= kTolerance * std::abs(want));
  cpu.logits_backward(logits.cpu(), sum_exp.cpu(), targets.cpu(), rows, cols, vocab, 0.01f);
  rank.kernels.logits_backward(logits.gpu(), sum_exp.gpu(), targets.gpu(), rows, cols, vocab,
                               0.01f);
  CHECK(logits.error(rank) < kTolerance);
}

TEST_CASE("cuda kernels: adam update, strided fill and copy", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<float> cpu;
  const int64_t n = 1000;
  const AdamConfig config{.lr = 1e-2f, .weight_decay = 0.1f};
  Twin<float> p(rank, random_values(n, 1)), g(rank, random_values(n, 2)),
      m(rank, random_values(n, 3, 0.1)), v(rank, random_values(n, 4, 0.0));
  for (float& x : v.host) x = 0.01f;
  rank.kernels.copy_from_host(v.gpu(), v.cpu(), n * 4);
  cpu.adam_update(config, 0.1f, 0.001f, p.cpu(), g.cpu(), m.cpu(), v.cpu(), n);
  rank.kernels.adam_update(config, 0.1f, 0.001f, p.gpu(), g.gpu(), m.gpu(), v.gpu(), n);
  CHECK(p.error(rank) < kTolerance);
  CHECK(m.error(rank) < kTolerance);
  CHECK(v.error(rank) < kTolerance);
  // 10 rows of 7 inside rows of 12, and back.
  Twin<float> wide(rank, random_values(10 * 12, 5)), packed(rank, std::vector<float>(70));
  cpu.fill(matrix(wide.cpu() + 2, 10, 7, 12), 1.5f);
  rank.kernels.fill(matrix(wide.gpu() + 2, 10, 7, 12), 1.5f);
  cpu.copy(matrix(packed.cpu(), 10, 7), matrix<const float>(wide.cpu() + 1, 10, 7, 12));
  rank.kernels.copy(matrix(packed.gpu(), 10, 7), matrix<const float>(wide.gpu() + 1, 10, 7, 12));
  CHECK(wide.error(rank) == 0);
  CHECK(packed.error(rank) == 0);
}

}  // namespace
}  // namespace shardplan
