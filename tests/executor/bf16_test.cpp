// bfloat16: the rounding against bit patterns worked out by hand (IEEE 754 round to nearest, ties
// to even, on the upper 16 bits of an fp32), and every CPU kernel in bf16 against the same kernel
// in fp32 on the same (bf16-representable) inputs. A bf16 kernel computes in fp32 and rounds each
// output once, so its outputs are exactly the fp32 kernel's outputs rounded — the contract the CUDA
// kernels are held to as well (tests/executor_cuda).
#include "executor/bf16.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "executor/cpu_kernels.h"
#include "executor/state/adam.h"

using namespace shardplan;

namespace {

uint16_t bits_of(float f) {
  return bf16(f).bits;
}
float from_bits(uint32_t u) {
  return std::bit_cast<float>(u);
}

// n values drawn in [lo, hi), each representable in bf16, as fp32 and as bf16.
struct Values {
  std::vector<float> f32;
  std::vector<bf16> b16;
};
Values values(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Values v;
  for (size_t i = 0; i < n; ++i) {
    v.b16.emplace_back(dist(gen));
    v.f32.push_back(float(v.b16.back()));
  }
  return v;
}

// Every bf16 output is the fp32 kernel's output rounded once.
void check_rounded(const std::vector<bf16>& got, const std::vector<float>& fp32) {
  REQUIRE(got.size() == fp32.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].bits != bf16(fp32[i]).bits) ++mismatches;
  CHECK(mismatches == 0);
}

CpuKernels<float>& f32() {
  return cpu_kernels<float>();
}
CpuKernels<bf16>& b16() {
  return cpu_kernels<bf16>();
}

}  // namespace

TEST_CASE("bf16: round to nearest, ties to even", "[executor]") {
  CHECK(bits_of(1.0f) == 0x3f80);
  CHECK(bits_of(-2.5f) == 0xc020);
  // 1 + 2^-8 lies halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81): to the even one.
  CHECK(bits_of(from_bits(0x3f808000)) == 0x3f80);
  // 1 + 3·2^-8 lies halfway between 0x3f81 (odd) and 0x3f82: to the even one, up.
  CHECK(bits_of(from_bits(0x3f818000)) == 0x3f82);
  // Just past halfway rounds up, just below rounds down.
  CHECK(bits_of(from_bits(0x3f808001)) == 0x3f81);
  CHECK(bits_of(from_bits(0x3f807fff)) == 0x3f80);
  // fp32's largest finite value is past bf16's largest (0x7f7f) by more than half an ulp.
  CHECK(bits_of(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(bits_of(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(std::isnan(float(bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A signalling-looking NaN whose payload is all in the dropped bits stays a NaN, not infinity.
  CHECK(std::isnan(float(bf16(from_bits(0x7f800001)))));
  // Widening is exact: 0x4049 is 3.140625.
  CHECK(float(bf16{from_bits(0x40490000)}) == 3.140625f);
}

TEST_CASE("bf16 kernels: GEMMs accumulate in fp32 and round once", "[executor]") {
  const int64_t m = 7, n = 5, k = 33;
  const Values a = values(static_cast<size_t>(m * k), -1, 1, 1);
  const Values b = values(static_cast<size_t>(k * n), -1, 1, 2);
  const Values c0 = values(static_cast<size_t>(m * n), -1, 1, 3);
  for (const Accumulate acc : {Accumulate::overwrite, Accumulate::add}) {
    for (const Op op_b : {Op::none, Op::transpose}) {
      INFO("add " << (acc == Accumulate::add) << ", transposed b " << (op_b == Op::transpose));
      // b as stored: k × n, or n × k for the transposed product.
      const int64_t b_rows = op_b == Op::none ? k : n, b_cols = op_b == Op::none ? n : k;
      std::vector<float> cf = c0.f32;
      std::vector<bf16> cb = c0.b16;
      f32().run_gemm_batched(matrix(cf.data(), m, n), matrix(a.f32.data(), m, k), Op::none,
                             matrix(b.f32.data(), b_rows, b_cols), op_b, acc, {}, nullptr);
      b16().run_gemm_batched(matrix(cb.data(), m, n), matrix(a.b16.data(), m, k), Op::none,
                             matrix(b.b16.data(), b_rows, b_cols), op_b, acc, {}, nullptr);
      check_rounded(cb, cf);
    }
  }
}

TEST_CASE("bf16 kernels: bias, residual, norms and activations round once", "[executor]") {
  const int64_t rows = 6, cols = 40;
  const size_t n = static_cast<size_t>(rows * cols);
  const Values x = values(n, -2, 2, 4), y0 = values(n, -1, 1, 5), dy = values(n, -1, 1, 6);
  const Values w = values(static_cast<size_t>(cols), 0.5f, 1.5f, 7);
  const Values bias = values(static_cast<size_t>(cols), -0.5f, 0.5f, 8);
  SECTION("bias_forward, residual_add") {
    std::vector<float> yf = y0.f32;
    std::vector<bf16> yb = y0.b16;
    f32().bias_forward(yf.data(), bias.f32.data(), rows, cols);
    b16().bias_forward(yb.data(), bias.b16.data(), rows, cols);
    check_rounded(yb, yf);
    yf = y0.f32;
    yb = y0.b16;
    f32().residual_add(yf.data(), x.f32.data(), bias.f32.data(), rows, cols);
    b16().residual_add(yb.data(), x.b16.data(), bias.b16.data(), rows, cols);
    check_rounded(yb, yf);
  }
  SECTION("bias_backward sums the rows in fp32") {
    std::vector<float> df = bias.f32;
    std::vector<bf16> db = bias.b16;
    f32().bias_backward(dy.f32.data(), rows, cols, df.data());
    b16().bias_backward(dy.b16.data(), rows, cols, db.data());
    check_rounded(db, df);
  }
  for (const Norm kind : {Norm::layernorm, Norm::rmsnorm}) {
    INFO("norm " << static_cast<int>(kind));
    std::vector<float> yf(n), dxf(n, 0.0f), dwf = w.f32, dbf = bias.f32;
    std::vector<bf16> yb(n), dxb(n, bf16(0.0f)), dwb = w.b16, dbb = bias.b16;
    const bool has_bias = kind == Norm::layernorm;
    f32().norm_forward(kind, x.f32.data(), w.f32.data(), has_bias ? bias.f32.data() : nullptr, rows,
                       cols, yf.data());
    b16().norm_forward(kind, x.b16.data(), w.b16.data(), has_bias ? bias.b16.data() : nullptr, rows,
                       cols, yb.data());
    check_rounded(yb, yf);
    f32().norm_backward(kind, x.f32.data(), w.f32.data(), dy.f32.data(), rows, cols, dxf.data(),
                        dwf.data(), has_bias ? dbf.data() : nullptr);
    b16().norm_backward(kind, x.b16.data(), w.b16.data(), dy.b16.data(), rows, cols, dxb.data(),
                        dwb.data(), has_bias ? dbb.data() : nullptr);
    check_rounded(dxb, dxf);
    check_rounded(dwb, dwf);
    if (has_bias) check_rounded(dbb, dbf);
  }
  for (const Activation kind : {Activation::gelu, Activation::swiglu}) {
    INFO("activation " << static_cast<int>(kind));
    const int64_t ffn = kind == Activation::swiglu ? cols / 2 : cols;
    std::vector<float> af(static_cast<size_t>(rows * ffn)), duf(n);
    std::vector<bf16> ab(af.size()), dub(n);
    f32().activation_forward(kind, x.f32.data(), rows, ffn, af.data());
    b16().activation_forward(kind, x.b16.data(), rows, ffn, ab.data());
    check_rounded(ab, af);
    f32().activation_backward(kind, x.f32.data(), dy.f32.data(), rows, ffn, duf.data());
    b16().activation_backward(kind, x.b16.data(), dy.b16.data(), rows, ffn, dub.data());
    check_rounded(dub, duf);
  }
}

TEST_CASE("bf16 kernels: causal softmax, embeddings, widen and narrow round once", "[executor]") {
  const int64_t S = 9, hidden = 16;
  const TokenPositions positions{S, 1, 0};
  SECTION("causal softmax forward and backward") {
    const ScoreBlocks blocks{2, S * S, S, S};
    const Values scores = values(static_cast<size_t>(2 * S * S), -3, 3, 9);
    std::vector<float> pf = scores.f32;
    std::vector<bf16> pb = scores.b16;
    f32().causal_softmax_forward(pf.data(), blocks, 0.5f, positions);
    b16().causal_softmax_forward(pb.data(), blocks, 0.5f, positions);
    check_rounded(pb, pf);
    // The backward from the bf16 probabilities in both precisions.
    std::vector<float> probs(pb.begin(), pb.end());
    const Values dp = values(pf.size(), -1, 1, 10);
    std::vector<float> gf = dp.f32;
    std::vector<bf16> gb = dp.b16;
    f32().causal_softmax_backward(probs.data(), blocks, gf.data(), blocks, 0.5f, positions);
    b16().causal_softmax_backward(pb.data(), blocks, gb.data(), blocks, 0.5f, positions);
    check_rounded(gb, gf);
  }
  SECTION("embedding rows and positions, forward and backward") {
    const std::vector<int32_t> tokens = {3, 1, 3, 0, 7, 3, 2, 5, 3};  // 3 repeats: sums
    const ElementRange rows{0, 6};                                    // 7 is another rank's
    const Values table = values(static_cast<size_t>(6 * hidden), -1, 1, 11);
    const Values wpe = values(static_cast<size_t>(S * hidden), -1, 1, 12);
    const Values dout = values(static_cast<size_t>(S * hidden), -1, 1, 13);
    std::vector<float> of(static_cast<size_t>(S * hidden), 0.0f);
    std::vector<bf16> ob(of.size(), bf16(0.0f));
    f32().embedding_rows(tokens.data(), S, table.f32.data(), rows, hidden, of.data());
    b16().embedding_rows(tokens.data(), S, table.b16.data(), rows, hidden, ob.data());
    f32().position_embedding_add(of.data(), S, hidden, wpe.f32.data(), positions, 0);
    b16().position_embedding_add(ob.data(), S, hidden, wpe.b16.data(), positions, 0);
    check_rounded(ob, of);
    std::vector<float> dtf = table.f32, dpf = wpe.f32;
    std::vector<bf16> dtb = table.b16, dpb = wpe.b16;
    f32().embedding_rows_backward(tokens.data(), S, dout.f32.data(), rows, hidden, dtf.data());
    b16().embedding_rows_backward(tokens.data(), S, dout.b16.data(), rows, hidden, dtb.data());
    check_rounded(dtb, dtf);
    f32().position_embedding_backward(dout.f32.data(), S, hidden, dpf.data(), positions, 0);
    b16().position_embedding_backward(dout.b16.data(), S, hidden, dpb.data(), positions, 0);
    check_rounded(dpb, dpf);
  }
  SECTION("widen is exact, narrow rounds") {
    const Values v = values(50, -100, 100, 14);
    std::vector<float> wide(v.b16.size());
    b16().widen(v.b16.data(), wide.data(), static_cast<int64_t>(wide.size()));
    CHECK(wide == v.f32);
    const std::vector<float> exact = {1.0f + 1.0f / 1024, -3.3f, 1e-3f};
    std::vector<bf16> narrow(exact.size());
    b16().narrow(exact.data(), narrow.data(), static_cast<int64_t>(exact.size()));
    check_rounded(narrow, exact);
  }
}

TEST_CASE("bf16 kernels: Adam steps the fp32 master weights and rounds them into the weights",
          "[executor]") {
  const size_t n = 64;
  const Values g = values(n, -1, 1, 15);
  const Values start = values(n, -1, 1, 16);
  std::vector<float> master = start.f32, m(n, 0.0f), v(n, 0.0f);
  std::vector<float> pf = start.f32, mf(n, 0.0f), vf(n, 0.0f);
  std::vector<bf16> params = start.b16;
  const AdamConfig config;
  b16().adam_update(config, 0.1f, 0.001f, master.data(), g.b16.data(), m.data(), v.data(),
                    params.data(), static_cast<int64_t>(n));
  f32().adam_update(config, 0.1f, 0.001f, pf.data(), g.f32.data(), mf.data(), vf.data(), nullptr,
                    static_cast<int64_t>(n));
  CHECK(master == pf);  // the same fp32 update
  CHECK(m == mf);
  CHECK(v == vf);
  check_rounded(params, master);
  // A step smaller than half a bf16 ulp leaves the weight but not its master copy: why mixed
  // precision keeps one (Micikevicius et al. 2018, §3.1).
  size_t moved_master_only = 0;
  for (size_t i = 0; i < n; ++i)
    if (master[i] != start.f32[i] && params[i].bits == start.b16[i].bits) ++moved_master_only;
  CHECK(moved_master_only > 0);
}
