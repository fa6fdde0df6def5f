#include "calibrate/calibrate_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "calibrate/operand_values.h"
#include "executor/layers/attention.h"
#include "executor/layers/embedding.h"
#include "executor/state/adam.h"

namespace shardplan {

namespace {

// The most elements Adam is timed over: 2^26, 1 GiB of parameters, gradients, moments and master
// weights (16 B an element in fp32 and in bf16 alike), far beyond any cache (a GPU's L2 is
// 50-60 MiB), so the rate is memory's and holds for larger shares too (kernel_rate_per_s keeps
// the largest size's rate beyond it). Llama 3 8B's whole state would not fit an 80 GiB GPU.
constexpr int64_t kMaxOptimizerElements = int64_t{1} << 26;

template <class T>
struct KernelTimer {
  const TimingOptions& t;
  MPI_Comm comm;
  const std::string& label;
  Kernels<T>& dev;
  std::vector<KernelTiming> out;

  void time(MemoryKernel k, int64_t elements, const std::function<void()>& op,
            const MatmulStats* excluded = nullptr) {
    const auto gemm_s = [excluded] { return excluded->seconds; };
    const double s = measuring(
        fmt::format("timing {} over {} elements", enum_name(k, kMemoryKernelNames), elements), [&] {
          return median_time_s(op, t, comm, excluded ? gemm_s : std::function<double()>{},
                               [this] { dev.synchronize(); });
        });
    out.push_back({k, static_cast<double>(elements), s, label});
  }
};

// `count` values of U in the device's memory: filled(count), or zeros.
template <class U, class T>
Buffer<U> device_buffer(Kernels<T>& dev, TensorAllocator& alloc, int64_t count, bool zero = false) {
  Buffer<U> b = alloc.allocate<U>(MemoryCategory::buffers, count, "kernel operand");
  if (!zero) fill_operand(dev, b.data(), count);
  return b;
}

}  // namespace

template <class T>
std::vector<KernelTiming> time_kernels(const LayerDims& d, int64_t vocab_rows, int64_t parameters,
                                       const std::string& label, const TimingOptions& t,
                                       MPI_Comm comm, Kernels<T>& dev, TensorAllocator& alloc) {
  using C = compute_t<T>;
  KernelTimer<T> timer{t, comm, label, dev, {}};
  const int64_t N = d.tokens(), L = d.local_tokens(), H = d.hidden, F = d.ffn;
  // Wide enough for a row of every kernel's operands: the hidden size too, which a tp share's MLP
  // and QKV columns can fall under (Llama 3 8B at tp=8: 3584 and 768 of 4096).
  const int64_t widest = std::max({d.fc1_width(), d.qkv_width(), d.hidden});
  const auto buffer = [&](int64_t count, bool zero = false) {
    return device_buffer<T>(dev, alloc, count, zero);
  };
  Buffer<T> x = buffer(N * widest), y = buffer(N * widest), dy = buffer(N * widest);
  Buffer<T> w = buffer(widest), dw = buffer(widest, true), db = buffer(widest, true);

  timer.time(MemoryKernel::norm_forward, L * H,
             [&] { dev.norm_forward(d.norm, x.data(), w.data(), w.data(), L, H, y.data()); });
  timer.time(MemoryKernel::norm_backward, L * H, [&] {
    dev.norm_backward(d.norm, x.data(), w.data(), dy.data(), L, H, y.data(), dw.data(), db.data());
  });
  timer.time(MemoryKernel::residual_forward, L * H,
             [&] { dev.residual_add(y.data(), x.data(), w.data(), L, H); });
  timer.time(MemoryKernel::residual_backward, L * H,
             [&] { dev.copy(y.data(), dy.data(), L * H); });  // block_backward's dx
  for (const int64_t cols : {d.qkv_width(), d.fc1_width()}) {
    timer.time(MemoryKernel::bias_forward, N * cols,
               [&] { dev.bias_forward(y.data(), w.data(), N, cols); });
    timer.time(MemoryKernel::bias_backward, N * cols,
               [&] { dev.bias_backward(dy.data(), N, cols, db.data()); });
  }
  const bool gelu = d.activation == Activation::gelu;
  timer.time(gelu ? MemoryKernel::gelu_forward : MemoryKernel::swiglu_forward, N * F,
             [&] { dev.activation_forward(d.activation, x.data(), N, F, y.data()); });
  timer.time(gelu ? MemoryKernel::gelu_backward : MemoryKernel::swiglu_backward, N * F,
             [&] { dev.activation_backward(d.activation, x.data(), dy.data(), N, F, y.data()); });

  // Attention's softmax: the calls' time outside their GEMMs (executor/layers/attention.cpp), where
  // the device times its GEMMs one by one (a CPU's; a GPU's run asynchronously, and its softmax is
  // left to the memory bandwidth's price).
  const int64_t scores = attention_probs_count(d);
  Buffer<T> qkv = buffer(N * d.qkv_width()), probs = buffer(scores, true),
            dctx = buffer(N * d.heads * d.head_dim), dqkv = buffer(N * d.qkv_width(), true),
            scratch = buffer(attention_scratch_count(dev, d), true);
  const KeyValues<const T*> kv = qkv_key_values<const T*>(d, qkv.data());
  const KeyValues<T*> dkv = qkv_key_values(d, dqkv.data());
  MatmulStats gemms;
  attention_forward<T>(dev, d, qkv.data(), kv, probs.data(), nullptr, &gemms);
  if (gemms.seconds > 0) {
    timer.time(
        MemoryKernel::softmax_forward, scores,
        [&] { attention_forward<T>(dev, d, qkv.data(), kv, probs.data(), nullptr, &gemms); },
        &gemms);
    timer.time(
        MemoryKernel::softmax_backward, scores,
        [&] {
          attention_backward(dev, d, qkv.data(), kv, probs.data(), dctx.data(), dqkv.data(), dkv,
                             scratch.data(), &gemms);
        },
        &gemms);
  }

  // The embedding and the cross entropy over this rank's vocabulary rows.
  LayerDims one = d;
  one.tp = 1;
  one.sequence_parallel = false;
  SingleRankTpComm<T> single;
  LayerContext<T> c{alloc, single, nullptr, nullptr, &dev};
  std::vector<int32_t> host_tokens(static_cast<size_t>(N));
  for (size_t i = 0; i < host_tokens.size(); ++i)
    host_tokens[i] = static_cast<int32_t>((i * 7919) % static_cast<size_t>(vocab_rows));
  Buffer<int32_t> tokens = alloc.allocate<int32_t>(MemoryCategory::buffers, N, "kernel tokens");
  dev.copy_from_host(tokens.data(), host_tokens.data(), N * static_cast<int64_t>(sizeof(int32_t)));
  const ElementRange vocab{0, vocab_rows};
  Buffer<T> wte = buffer(vocab_rows * H), wpe = buffer(d.seq * H),
            dwte = buffer(vocab_rows * H, true), dwpe = buffer(d.seq * H, true);
  timer.time(MemoryKernel::embedding_forward, N * H,
             [&] { embedding_forward(one, tokens.data(), wte.data(), vocab, wpe.data(), c); });
  timer.time(MemoryKernel::embedding_backward, N * H, [&] {
    embedding_backward(one, tokens.data(), dy.data(), vocab, dwte.data(), dwpe.data(), c);
  });
  // The cross entropy on the fp32 logits (lm_head.h); under bf16 their casts from and to bf16
  // are priced at the memory rate.
  const auto compute_buffer = [&](int64_t count, bool zero = false) {
    return device_buffer<C>(dev, alloc, count, zero);
  };
  Buffer<C> logits = compute_buffer(N * vocab_rows), row_max = compute_buffer(N, true),
            target = compute_buffer(N, true), sum_exp = compute_buffer(N, true);
  timer.time(MemoryKernel::cross_entropy_forward, N * vocab_rows, [&] {
    dev.logits_row_max(logits.data(), N, vocab_rows, row_max.data());
    dev.logits_target(logits.data(), tokens.data(), N, vocab_rows, vocab, target.data());
    dev.logits_exponentiate(logits.data(), N, vocab_rows, row_max.data(), sum_exp.data());
    dev.token_loss_sum(row_max.data(), sum_exp.data(), target.data(), N);
  });
  timer.time(MemoryKernel::cross_entropy_backward, N * vocab_rows, [&] {
    dev.logits_backward(logits.data(), sum_exp.data(), tokens.data(), N, vocab_rows, vocab,
                        C(1e-3f));
  });

  if (parameters > 0) {
    Buffer<T> params = buffer(parameters), grads = buffer(parameters);
    const bool master = !std::is_same_v<T, float>;
    AdamState adam = adam_state(alloc, parameters, master);
    if (master) fill_operand(dev, adam.master.data(), parameters);
    timer.time(MemoryKernel::optimizer_step, parameters,
               [&] { adam_step<T>(dev, AdamConfig{}, adam, params.span(), grads.span()); });
  }
  return timer.out;
}

template <class T>
std::vector<KernelTiming> model_kernel_timings(const std::vector<LayerShare>& shares,
                                               const TimingOptions& t, MPI_Comm comm,
                                               Kernels<T>& dev, TensorAllocator& alloc) {
  std::vector<KernelTiming> timings;
  std::set<int64_t> optimizer_sizes;  // timed once each: the micro-batch does not change them
  for (const LayerShare& s : shares) {
    int64_t parameters = std::min(count_parameters(s.model).total() / s.tp, kMaxOptimizerElements);
    if (!optimizer_sizes.insert(parameters).second) parameters = 0;
    for (KernelTiming& k : measuring("the kernels of " + s.label, [&] {
           return time_kernels(s.dims, s.vocab_rows, parameters, s.label, t, comm, dev, alloc);
         }))
      timings.push_back(std::move(k));
  }
  return timings;
}

#define SHARDPLAN_INSTANTIATE(T)                                                               \
  template std::vector<KernelTiming> time_kernels<T>(const LayerDims&, int64_t, int64_t,       \
                                                     const std::string&, const TimingOptions&, \
                                                     MPI_Comm, Kernels<T>&, TensorAllocator&); \
  template std::vector<KernelTiming> model_kernel_timings<T>(const std::vector<LayerShare>&,   \
                                                             const TimingOptions&, MPI_Comm,   \
                                                             Kernels<T>&, TensorAllocator&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

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
