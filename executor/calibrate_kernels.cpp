#include "executor/calibrate_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "executor/activation.h"
#include "executor/adam.h"
#include "executor/attention.h"
#include "executor/cross_entropy.h"
#include "executor/embedding.h"
#include "executor/linear.h"
#include "executor/norm.h"

namespace shardplan {

namespace {

// Values of the size a layer sees (|x| < 1, none zero), so no kernel takes a special path.
std::vector<float> filled(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.5f * std::sin(0.37f * static_cast<float>(i)) + 0.01f;
  return v;
}

struct KernelTimer {
  const TimingOptions& t;
  MPI_Comm comm;
  const std::string& label;
  std::vector<KernelTiming> out;

  void time(MemoryKernel k, int64_t elements, const std::function<void()>& op,
            const MatmulStats* excluded = nullptr) {
    const auto gemm_s = [excluded] { return excluded->seconds; };
    const double s = median_time_s(op, t, comm, excluded ? gemm_s : std::function<double()>{});
    out.push_back({k, static_cast<double>(elements), s, label});
  }
};

}  // namespace

std::vector<KernelTiming> time_kernels(const LayerDims& d, int64_t vocab_rows, int64_t parameters,
                                       const std::string& label, const TimingOptions& t,
                                       MPI_Comm comm) {
  KernelTimer timer{t, comm, label, {}};
  CpuKernels<float>& cpu = cpu_kernels<float>();
  const int64_t N = d.tokens(), L = d.local_tokens(), H = d.hidden, F = d.ffn;
  const int64_t widest = std::max(d.fc1_width(), d.qkv_width());
  std::vector<float> x = filled(N * widest), y = filled(N * widest), dy = filled(N * widest);
  std::vector<float> w = filled(widest), dw(static_cast<size_t>(widest)),
                     db(static_cast<size_t>(widest));

  timer.time(MemoryKernel::norm_forward, L * H,
             [&] { norm_forward(d.norm, x.data(), w.data(), w.data(), L, H, y.data()); });
  timer.time(MemoryKernel::norm_backward, L * H, [&] {
    norm_backward(d.norm, x.data(), w.data(), dy.data(), L, H, y.data(), dw.data(), db.data());
  });
  timer.time(MemoryKernel::residual_forward, L * H,
             [&] { residual_add(y.data(), x.data(), w.data(), L, H); });
  timer.time(MemoryKernel::residual_backward, L * H,
             [&] { std::copy(dy.data(), dy.data() + L * H, y.data()); });  // block_backward's dx
  for (const int64_t cols : {d.qkv_width(), d.fc1_width()}) {
    timer.time(MemoryKernel::bias_forward, N * cols,
               [&] { bias_forward(y.data(), w.data(), N, cols); });
    timer.time(MemoryKernel::bias_backward, N * cols,
               [&] { bias_backward(dy.data(), N, cols, db.data()); });
  }
  const bool gelu = d.activation == Activation::gelu;
  timer.time(gelu ? MemoryKernel::gelu_forward : MemoryKernel::swiglu_forward, N * F,
             [&] { activation_forward(d.activation, x.data(), N, F, y.data()); });
  timer.time(gelu ? MemoryKernel::gelu_backward : MemoryKernel::swiglu_backward, N * F,
             [&] { activation_backward(d.activation, x.data(), dy.data(), N, F, y.data()); });

  // Attention's softmax: the calls' time outside their GEMMs (executor/attention.cpp).
  const int64_t scores = attention_probs_count(d);
  std::vector<float> qkv = filled(N * d.qkv_width()), probs(static_cast<size_t>(scores)),
                     dctx = filled(N * d.heads * d.head_dim), dqkv(qkv.size()),
                     scratch(static_cast<size_t>(d.seq * d.kv_seq()));
  const KeyValues<const float*> kv = qkv_key_values<const float*>(d, qkv.data());
  const KeyValues<float*> dkv = qkv_key_values(d, dqkv.data());
  MatmulStats gemms;
  timer.time(
      MemoryKernel::softmax_forward, scores,
      [&] { attention_probs(cpu, d, qkv.data(), kv, probs.data(), &gemms); }, &gemms);
  timer.time(
      MemoryKernel::softmax_backward, scores,
      [&] {
        attention_backward(cpu, d, qkv.data(), kv, probs.data(), dctx.data(), dqkv.data(), dkv,
                           scratch.data(), &gemms);
      },
      &gemms);

  // The embedding and the cross entropy over this rank's vocabulary rows.
  LayerDims one = d;
  one.tp = 1;
  one.sequence_parallel = false;
  TensorAllocator alloc("calibration");
  SingleRankTpComm<float> single;
  LayerContext<float> c{alloc, single, nullptr};
  std::vector<int32_t> tokens(static_cast<size_t>(N));
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>((i * 7919) % static_cast<size_t>(vocab_rows));
  const ElementRange vocab{0, vocab_rows};
  std::vector<float> wte = filled(vocab_rows * H), wpe = filled(d.seq * H), dwte(wte.size()),
                     dwpe(wpe.size());
  timer.time(MemoryKernel::embedding_forward, N * H,
             [&] { embedding_forward(one, tokens.data(), wte.data(), vocab, wpe.data(), c); });
  timer.time(MemoryKernel::embedding_backward, N * H, [&] {
    embedding_backward(one, tokens.data(), dy.data(), vocab, dwte.data(), dwpe.data(), c);
  });
  std::vector<float> logits = filled(N * vocab_rows), row_max(static_cast<size_t>(N)),
                     target(row_max.size()), sum_exp(row_max.size());
  timer.time(MemoryKernel::cross_entropy_forward, N * vocab_rows, [&] {
    logits_row_max(logits.data(), N, vocab_rows, row_max.data());
    logits_target(logits.data(), tokens.data(), N, vocab_rows, vocab, target.data());
    logits_exponentiate(logits.data(), N, vocab_rows, row_max.data(), sum_exp.data());
    token_loss_sum(row_max.data(), sum_exp.data(), target.data(), N);
  });
  timer.time(MemoryKernel::cross_entropy_backward, N * vocab_rows, [&] {
    logits_backward(logits.data(), sum_exp.data(), tokens.data(), N, vocab_rows, vocab, 1e-3f);
  });

  std::vector<float> params = filled(parameters), grads = filled(parameters);
  AdamState adam = adam_state(alloc, parameters);
  timer.time(MemoryKernel::optimizer_step, parameters,
             [&] { adam_step(cpu, AdamConfig{}, adam, params, grads); });
  return timer.out;
}

std::vector<KernelRate> kernel_rates(const std::vector<KernelTiming>& timings) {
  std::map<std::pair<MemoryKernel, double>, std::pair<int, double>> by_size;  // calls, seconds
  for (const KernelTiming& k : timings) {
    auto& [calls, seconds] = by_size[{k.kernel, k.elements}];
    ++calls;
    seconds += k.time_s;
  }
  std::vector<KernelRate> rates;
  for (const auto& [key, cs] : by_size)
    rates.push_back({key.first, key.second, key.second * cs.first / cs.second});
  return rates;
}

void print_kernel_timings(std::FILE* out, const std::vector<KernelTiming>& timings) {
  fmt::print(out, "# {:<24} {:>12} {:>10} {:>12}  {}\n", "kernel", "elements", "time",
             "Melements/s", "shape");
  fmt::print(out, "# {:<24} {:>12} {:>10} {:>12}\n", "", "", "(us)", "");
  for (const KernelTiming& k : timings)
    fmt::print(out, "  {:<24} {:>12.0f} {:>10.1f} {:>12.1f}  {}\n",
               enum_name(k.kernel, kMemoryKernelNames), k.elements, k.time_s * 1e6,
               k.elements / k.time_s / 1e6, k.what);
  fmt::print(out, "\n");
}

}  // namespace shardplan
