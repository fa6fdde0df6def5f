// Every CUDA kernel against the CPU backend's host loop on the same random inputs, for fp32 and for
// bf16 storage (CudaKernels<T> against CpuKernels<T>): gemm batched and not, each op and
// accumulation; the layers' kernels; cross-entropy; Adam; conversions; strided fills and copies.
// Error: max |gpu − cpu| / max |cpu| per output, printed beside its tolerance. Kernels that add in
// the CPU's order with no product to contract (bias, residual and position adds, the embedding
// gradients, gathers, conversions, copies) give the CPU's bits. The others differ by fp32 sums in
// another order, FMA contraction and the device's exp: 1e-5 in fp32, 1e-4 for the GEMMs' longer
// sums (cuBLAS without TF32); in bf16, where both sides compute in fp32 and round once, by one
// bf16 ulp where an fp32 result sits near a rounding boundary — at most 2^-7 of the value (8
// significant bits) — so 1e-2 for kernels and GEMMs alike. Skipped without a CUDA device.
#include <catch2/catch.hpp>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cuda_test_device.h"
#include "executor/counter_rng.h"
#include "executor/cpu_kernels.h"

namespace shardplan {
namespace {

template <class T>
struct Tolerance;
template <>
struct Tolerance<float> {
  static constexpr double kernel = 1e-5, gemm = 1e-4;
};
template <>
struct Tolerance<bf16> {
  static constexpr double kernel = 1e-2, gemm = 1e-2;
};

template <class T>
std::vector<T> random_values(int64_t n, uint64_t seed, double scale = 1.0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<T>(static_cast<float>(scale * counter_normal(seed, 1, i)));
  return v;
}

// One array twice: on the host for the CPU kernels, on the GPU for the CUDA kernels.
template <class T>
struct Twin {
  std::vector<T> host;
  Buffer<T> device;

  Twin(test::CudaRank& rank, std::vector<T> values) : host(std::move(values)), rank_(rank) {
    device = rank.alloc.allocate<T>(MemoryCategory::buffers, static_cast<int64_t>(host.size()),
                                    "test array");
    upload();
  }
  T* cpu() { return host.data(); }
  T* gpu() { return device.data(); }
  // The host's values onto the GPU: the next kernel on both sides starts from the same inputs.
  void upload() { rank_.kernels.copy_from_host(device.data(), host.data(), device.bytes()); }
  // max |gpu − cpu| / max |cpu|.
  double error() {
    std::vector<T> got(host.size());
    rank_.kernels.copy_to_host(got.data(), device.data(), device.bytes());
    double err = 0, scale = 1e-30;
    for (size_t i = 0; i < got.size(); ++i) {
      const auto want = static_cast<double>(static_cast<float>(host[i]));
      err = std::max(err, std::abs(static_cast<double>(static_cast<float>(got[i])) - want));
      scale = std::max(scale, std::abs(want));
    }
    return err / scale;
  }

 private:
  test::CudaRank& rank_;
};

// Prints the error beside the tolerance it is held to.
#define CHECK_ERROR(twin, tolerance)                                   \
  do {                                                                 \
    const double error_ = (twin).error();                              \
    INFO(#twin ": error " << error_ << ", tolerance " << (tolerance)); \
    CHECK(error_ <= (tolerance));                                      \
  } while (false)

std::vector<int32_t> tokens(int64_t n, int32_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(vocab));
  return t;
}

TEMPLATE_TEST_CASE("cuda kernels: gemm, every op and accumulation, batched with strides", "[cuda]",
                   float, bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  const int64_t m = 37, n = 29, k = 41, count = 3;
  for (Op op_a : {Op::none, Op::transpose})
    for (Op op_b : {Op::none, Op::transpose})
      for (Accumulate acc : {Accumulate::overwrite, Accumulate::add}) {
        // Strided operands inside wider rows, as attention's heads are.
        const int64_t a_rows = op_a == Op::none ? m : k, a_cols = op_a == Op::none ? k : m;
        const int64_t b_rows = op_b == Op::none ? k : n, b_cols = op_b == Op::none ? n : k;
        const int64_t lda = a_cols + 5, ldb = b_cols + 3, ldc = n + 7;
        const GemmBatch batch{count, a_rows * lda, b_rows * ldb, m * ldc};
        Twin<T> a(rank, random_values<T>(count * a_rows * lda, 1)),
            b(rank, random_values<T>(count * b_rows * ldb, 2)),
            c(rank, random_values<T>(count * m * ldc, 3));
        for (Kernels<T>* dev : {static_cast<Kernels<T>*>(&cpu), static_cast<Kernels<T>*>(&gpu)}) {
          const bool on_gpu = dev == &gpu;
          dev->run_gemm_batched(matrix(on_gpu ? c.gpu() : c.cpu(), m, n, ldc),
                                matrix<const T>(on_gpu ? a.gpu() : a.cpu(), a_rows, a_cols, lda),
                                op_a,
                                matrix<const T>(on_gpu ? b.gpu() : b.cpu(), b_rows, b_cols, ldb),
                                op_b, acc, batch, nullptr);
        }
        INFO("op_a " << int(op_a) << " op_b " << int(op_b) << " acc " << int(acc));
        CHECK_ERROR(c, Tolerance<T>::gemm);
      }
}

TEMPLATE_TEST_CASE("cuda kernels: bias, residual, bias gradient", "[cuda]", float, bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  const int64_t rows = 300, cols = 70;
  Twin<T> y(rank, random_values<T>(rows * cols, 1)), x(rank, random_values<T>(rows * cols, 2)),
      b(rank, random_values<T>(cols, 3)), db(rank, random_values<T>(cols, 4));
  cpu.bias_forward(y.cpu(), b.cpu(), rows, cols);
  gpu.bias_forward(y.gpu(), b.gpu(), rows, cols);
  cpu.residual_add(y.cpu(), x.cpu(), b.cpu(), rows, cols);
  gpu.residual_add(y.gpu(), x.gpu(), b.gpu(), rows, cols);
  cpu.residual_add(y.cpu(), x.cpu(), nullptr, rows, cols);
  gpu.residual_add(y.gpu(), x.gpu(), nullptr, rows, cols);
  CHECK_ERROR(y, 0.0);
  cpu.bias_backward(x.cpu(), rows, cols, db.cpu());
  gpu.bias_backward(x.gpu(), rows, cols, db.gpu());
  CHECK_ERROR(db, Tolerance<T>::kernel);
}

TEMPLATE_TEST_CASE("cuda kernels: layernorm and rmsnorm, forward and backward", "[cuda]", float,
                   bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  const int64_t rows = 50, hidden = 600;  // wider than a block: the row loops stride
  for (Norm kind : {Norm::layernorm, Norm::rmsnorm}) {
    INFO(enum_name(kind, kNormNames));
    std::vector<T> xs = random_values<T>(rows * hidden, 1, 2.0);
    for (T& v : xs) v = static_cast<T>(static_cast<float>(v) + 1.5f);
    Twin<T> x(rank, xs), w(rank, random_values<T>(hidden, 2)), b(rank, random_values<T>(hidden, 3)),
        y(rank, std::vector<T>(xs.size())), dy(rank, random_values<T>(rows * hidden, 4)),
        dx(rank, random_values<T>(rows * hidden, 5)), dw(rank, random_values<T>(hidden, 6)),
        db(rank, random_values<T>(hidden, 7));
    const bool ln = kind == Norm::layernorm;
    cpu.norm_forward(kind, x.cpu(), w.cpu(), ln ? b.cpu() : nullptr, rows, hidden, y.cpu());
    gpu.norm_forward(kind, x.gpu(), w.gpu(), ln ? b.gpu() : nullptr, rows, hidden, y.gpu());
    CHECK_ERROR(y, Tolerance<T>::kernel);
    cpu.norm_backward(kind, x.cpu(), w.cpu(), dy.cpu(), rows, hidden, dx.cpu(), dw.cpu(),
                      ln ? db.cpu() : nullptr);
    gpu.norm_backward(kind, x.gpu(), w.gpu(), dy.gpu(), rows, hidden, dx.gpu(), dw.gpu(),
                      ln ? db.gpu() : nullptr);
    CHECK_ERROR(dx, Tolerance<T>::kernel);
    CHECK_ERROR(dw, Tolerance<T>::kernel);
    CHECK_ERROR(db, Tolerance<T>::kernel);
  }
}

TEMPLATE_TEST_CASE("cuda kernels: gelu and swiglu, forward and backward", "[cuda]", float, bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  const int64_t rows = 40, ffn = 90;
  for (Activation kind : {Activation::gelu, Activation::swiglu}) {
    INFO(enum_name(kind, kActivationNames));
    const int64_t width = kind == Activation::swiglu ? 2 * ffn : ffn;
    Twin<T> u(rank, random_values<T>(rows * width, 1, 2.0)),
        a(rank, std::vector<T>(static_cast<size_t>(rows * ffn))),
        da(rank, random_values<T>(rows * ffn, 2)), du(rank, std::vector<T>(u.host.size()));
    cpu.activation_forward(kind, u.cpu(), rows, ffn, a.cpu());
    gpu.activation_forward(kind, u.gpu(), rows, ffn, a.gpu());
    CHECK_ERROR(a, Tolerance<T>::kernel);
    cpu.activation_backward(kind, u.cpu(), da.cpu(), rows, ffn, du.cpu());
    gpu.activation_backward(kind, u.gpu(), da.gpu(), rows, ffn, du.gpu());
    CHECK_ERROR(du, Tolerance<T>::kernel);
  }
}

TEMPLATE_TEST_CASE("cuda kernels: causal softmax over score blocks, with cp positions", "[cuda]",
                   float, bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  // cp = 2, rank 1 of it: 8 query rows against 16 keys, blocks 2·8·16 apart (every other head).
  const TokenPositions positions{8, 2, 1};
  const int64_t rows = 8, cols = 16, count = 3, stride = 2 * rows * cols;
  const ScoreBlocks probs_blocks{count, stride, rows, cols},
      grad_blocks{count, rows * cols, rows, cols};
  Twin<T> scores(rank, random_values<T>(count * stride, 1, 3.0)),
      grads(rank, random_values<T>(count * rows * cols, 2));
  cpu.causal_softmax_forward(scores.cpu(), probs_blocks, 0.25f, positions);
  gpu.causal_softmax_forward(scores.gpu(), probs_blocks, 0.25f, positions);
  CHECK_ERROR(scores, Tolerance<T>::kernel);
  scores.upload();  // the backward from the same probabilities
  cpu.causal_softmax_backward(scores.cpu(), probs_blocks, grads.cpu(), grad_blocks, 0.25f,
                              positions);
  gpu.causal_softmax_backward(scores.gpu(), probs_blocks, grads.gpu(), grad_blocks, 0.25f,
                              positions);
  CHECK_ERROR(grads, Tolerance<T>::kernel);
}

// Repeated tokens (every 256th position is the same id), so rows of the table gradient sum
// several tokens' gradients.
TEMPLATE_TEST_CASE("cuda kernels: embedding rows and positions, forward and backward", "[cuda]",
                   float, bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  const int64_t count = 600, hidden = 48, vocab = 256;
  const ElementRange mine{64, 192};  // a tp rank's rows: other tokens are not its
  const TokenPositions positions{16, 2, 0};
  Twin<int32_t> ids(rank, tokens(count, static_cast<int32_t>(vocab)));
  Twin<T> table(rank, random_values<T>(mine.count() * hidden, 1)),
      out(rank, std::vector<T>(static_cast<size_t>(count * hidden))),
      wpe(rank, random_values<T>(2 * positions.seq * hidden, 2)),
      dout(rank, random_values<T>(count * hidden, 3)),
      dtable(rank, random_values<T>(mine.count() * hidden, 4)),
      dwpe(rank, random_values<T>(2 * positions.seq * hidden, 5));
  cpu.embedding_rows(ids.cpu(), count, table.cpu(), mine, hidden, out.cpu());
  gpu.embedding_rows(ids.gpu(), count, table.gpu(), mine, hidden, out.gpu());
  cpu.position_embedding_add(out.cpu(), count, hidden, wpe.cpu(), positions, 5);
  gpu.position_embedding_add(out.gpu(), count, hidden, wpe.gpu(), positions, 5);
  CHECK_ERROR(out, 0.0);
  cpu.embedding_rows_backward(ids.cpu(), count, dout.cpu(), mine, hidden, dtable.cpu());
  gpu.embedding_rows_backward(ids.gpu(), count, dout.gpu(), mine, hidden, dtable.gpu());
  CHECK_ERROR(dtable, 0.0);
  cpu.position_embedding_backward(dout.cpu(), count, hidden, dwpe.cpu(), positions, 5);
  gpu.position_embedding_backward(dout.gpu(), count, hidden, dwpe.gpu(), positions, 5);
  CHECK_ERROR(dwpe, 0.0);
}

// On the fp32 copy of the logits for either storage type.
TEMPLATE_TEST_CASE("cuda kernels: vocabulary-parallel cross-entropy pieces and loss", "[cuda]",
                   float, bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  constexpr double tolerance = Tolerance<float>::kernel;
  const int64_t rows = 33, cols = 500;
  const ElementRange vocab{500, 1000};
  Twin<int32_t> targets(rank, tokens(rows, 1000));
  Twin<float> logits(rank, random_values<float>(rows * cols, 1, 4.0)),
      row_max(rank, std::vector<float>(rows)), target(rank, std::vector<float>(rows)),
      sum_exp(rank, std::vector<float>(rows));
  cpu.logits_row_max(logits.cpu(), rows, cols, row_max.cpu());
  gpu.logits_row_max(logits.gpu(), rows, cols, row_max.gpu());
  CHECK_ERROR(row_max, 0.0);
  cpu.logits_target(logits.cpu(), targets.cpu(), rows, cols, vocab, target.cpu());
  gpu.logits_target(logits.gpu(), targets.gpu(), rows, cols, vocab, target.gpu());
  CHECK_ERROR(target, 0.0);
  cpu.logits_exponentiate(logits.cpu(), rows, cols, row_max.cpu(), sum_exp.cpu());
  gpu.logits_exponentiate(logits.gpu(), rows, cols, row_max.gpu(), sum_exp.gpu());
  CHECK_ERROR(logits, tolerance);
  CHECK_ERROR(sum_exp, tolerance);
  const double want = cpu.token_loss_sum(row_max.cpu(), sum_exp.cpu(), target.cpu(), rows);
  const double got = gpu.token_loss_sum(row_max.gpu(), sum_exp.gpu(), target.gpu(), rows);
  CHECK(std::abs(got - want) <= tolerance * std::abs(want));
  cpu.logits_backward(logits.cpu(), sum_exp.cpu(), targets.cpu(), rows, cols, vocab, 0.01f);
  gpu.logits_backward(logits.gpu(), sum_exp.gpu(), targets.gpu(), rows, cols, vocab, 0.01f);
  CHECK_ERROR(logits, tolerance);
}

// fp32 updates its weights in place (no params); bf16 its fp32 master copy, rounded into params.
TEMPLATE_TEST_CASE("cuda kernels: adam update, conversions, strided fill and copy", "[cuda]", float,
                   bf16) {
  using T = TestType;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  CpuKernels<T> cpu;
  CudaKernels<T>& gpu = rank.kernels_for<T>();
  const int64_t n = 1000;
  const AdamConfig config{.lr = 1e-2f, .weight_decay = 0.1f};
  Twin<float> master(rank, random_values<float>(n, 1)), m(rank, random_values<float>(n, 3, 0.1)),
      v(rank, std::vector<float>(static_cast<size_t>(n), 0.01f));
  Twin<T> g(rank, random_values<T>(n, 2)), params(rank, std::vector<T>(static_cast<size_t>(n)));
  constexpr bool has_master = !std::is_same_v<T, float>;
  cpu.adam_update(config, 0.1f, 0.001f, master.cpu(), g.cpu(), m.cpu(), v.cpu(),
                  has_master ? params.cpu() : nullptr, n);
  gpu.adam_update(config, 0.1f, 0.001f, master.gpu(), g.gpu(), m.gpu(), v.gpu(),
                  has_master ? params.gpu() : nullptr, n);
  CHECK_ERROR(master, Tolerance<float>::kernel);
  CHECK_ERROR(m, Tolerance<float>::kernel);
  CHECK_ERROR(v, Tolerance<float>::kernel);
  CHECK_ERROR(params, Tolerance<T>::kernel);
  // widen the gradients; narrow the fp32 moments (rounding them in bf16).
  Twin<float> wide(rank, std::vector<float>(static_cast<size_t>(n)));
  cpu.widen(g.cpu(), wide.cpu(), n);
  gpu.widen(g.gpu(), wide.gpu(), n);
  CHECK_ERROR(wide, 0.0);
  m.upload();
  cpu.narrow(m.cpu(), g.cpu(), n);
  gpu.narrow(m.gpu(), g.gpu(), n);
  CHECK_ERROR(g, 0.0);
  // 10 rows of 7 inside rows of 12, and back.
  Twin<T> wider(rank, random_values<T>(10 * 12, 5)), packed(rank, std::vector<T>(70));
  cpu.fill(matrix(wider.cpu() + 2, 10, 7, 12), T(1.5f));
  gpu.fill(matrix(wider.gpu() + 2, 10, 7, 12), T(1.5f));
  cpu.copy(matrix(packed.cpu(), 10, 7), matrix<const T>(wider.cpu() + 1, 10, 7, 12));
  gpu.copy(matrix(packed.gpu(), 10, 7), matrix<const T>(wider.gpu() + 1, 10, 7, 12));
  CHECK_ERROR(wider, 0.0);
  CHECK_ERROR(packed, 0.0);
}

TEST_CASE("cuda kernels: a contiguous copy beyond 2 GiB", "[cuda]") {
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  test::CudaRank rank;
  // 2^29 + 3 floats, 2 GiB and 12 B: one row wider than int32 counts, through copy's
  // cudaMemcpy2DAsync (on the H100 this test ran on ef1555a's one-block cudaMemcpyAsync; a 2D copy
  // of that width ran there through CuPy). The first and last MiB checked.
  const int64_t n = (int64_t{1} << 29) + 3, edge = int64_t{1} << 18;
  Buffer<float> from = rank.alloc.allocate<float>(MemoryCategory::buffers, n, "copy source");
  Buffer<float> to = rank.alloc.allocate<float>(MemoryCategory::buffers, n, "copy target");
  const std::vector<float> head = random_values<float>(edge, 7),
                           tail = random_values<float>(edge, 8);
  rank.kernels.fill(to.data(), n, 0.0f);
  rank.kernels.copy_from_host(from.data(), head.data(), edge * 4);
  rank.kernels.copy_from_host(from.data() + n - edge, tail.data(), edge * 4);
  rank.kernels.copy(to.data(), from.data(), n);
  std::vector<float> got_head(static_cast<size_t>(edge)), got_tail(static_cast<size_t>(edge));
  rank.kernels.copy_to_host(got_head.data(), to.data(), edge * 4);
  rank.kernels.copy_to_host(got_tail.data(), to.data() + n - edge, edge * 4);
  CHECK(got_head == head);
  CHECK(got_tail == tail);
}

}  // namespace
}  // namespace shardplan
