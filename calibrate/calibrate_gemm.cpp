#include "calibrate/calibrate_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "calibrate/calibrate_memory.h"
#include "calibrate/layer_gemms.h"
#include "calibrate/operand_values.h"

namespace shardplan {

std::vector<GemmCall> layer_gemm_calls(const LayerDims& d, int64_t vocab_rows,
                                       const std::string& label,
                                       const HeadsPerCall& heads_per_call) {
  LayerGemms recorded = record_layer_gemms(d, vocab_rows, heads_per_call);
  std::vector<GemmCall> calls = std::move(recorded.layer);
  calls.insert(calls.end(), recorded.head.begin(), recorded.head.end());
  for (GemmCall& c : calls) c.what = label + " " + c.what;
  std::vector<GemmCall> distinct;
  add_distinct(distinct, calls);
  return distinct;
}

void add_distinct(std::vector<GemmCall>& into, const std::vector<GemmCall>& calls) {
  for (const auto& c : calls)
    if (std::find(into.begin(), into.end(), c) == into.end()) into.push_back(c);
}

namespace {

// Seconds of one GEMM of call g: its whole batch timed, each GEMM taking its share.
template <class T>
double time_gemm_call(const GemmCall& g, const TimingOptions& t, MPI_Comm comm, Kernels<T>& dev,
                      TensorAllocator& alloc, int64_t cold_bytes) {
  // Operands as stored: op(A) is m×k, so A is k×m when transposed; likewise B.
  const int64_t a_rows = g.op_a == Op::none ? g.m : g.k, a_cols = g.op_a == Op::none ? g.k : g.m;
  const int64_t b_rows = g.op_b == Op::none ? g.k : g.n, b_cols = g.op_b == Op::none ? g.n : g.k;
  const int64_t rows[3] = {a_rows, b_rows, g.m}, cols[3] = {a_cols, b_cols, g.n};
  const int64_t given[3] = {g.stride_a, g.stride_b, g.stride_c};
  const int64_t apart[3] = {g.batch_stride_a, g.batch_stride_b, g.batch_stride_c};
  int64_t strides[3], sizes[3];
  for (int i = 0; i < 3; ++i) {
    strides[i] = given[i] > 0 ? given[i] : cols[i];
    sizes[i] = (g.batch - 1) * apart[i] + rows[i] * strides[i];
  }
  const bool cold[3] = {g.cold_a, g.cold_b, g.cold_c};
  int64_t cold_set_bytes = 0;
  for (int i = 0; i < 3; ++i)
    if (cold[i]) cold_set_bytes += static_cast<int64_t>(sizeof(T)) * sizes[i];
  const int64_t copies = cold_copies(cold_set_bytes, cold_bytes);
  // operands[i][j]: operand i (A, B, C), copy j; a warm operand has one copy.
  std::vector<std::vector<Buffer<T>>> operands(3);
  const char* names[3] = {"gemm a", "gemm b", "gemm c"};
  for (int i = 0; i < 3; ++i)
    for (int64_t j = 0; j < (cold[i] ? copies : 1); ++j) {
      Buffer<T>& x =
          operands[i].emplace_back(alloc.allocate<T>(MemoryCategory::buffers, sizes[i], names[i]));
      if (i < 2)
        fill_operand(dev, x.data(), x.size());
      else
        dev.fill(x.data(), x.size(), T(0.0f));  // C: overwritten, or accumulated into
    }
  size_t next = 0;
  const auto run = [&] {
    const auto copy = [&](int i) { return operands[i][next % operands[i].size()].data(); };
    dev.run_gemm_batched(matrix(copy(2), g.m, g.n, strides[2]),
                         matrix<const T>(copy(0), a_rows, a_cols, strides[0]), g.op_a,
                         matrix<const T>(copy(1), b_rows, b_cols, strides[1]), g.op_b, g.acc,
                         GemmBatch{g.batch, apart[0], apart[1], apart[2]}, nullptr);
    ++next;
  };
  return median_time_s(run, t, comm, {}, [&] { dev.synchronize(); }) / static_cast<double>(g.batch);
}

}  // namespace

template <class T>
std::vector<GemmTiming> time_gemm_calls(const std::vector<GemmCall>& calls, const TimingOptions& t,
                                        MPI_Comm comm, Kernels<T>& dev, TensorAllocator& alloc,
                                        int64_t cold_bytes) {
  std::vector<GemmTiming> out;
  for (const GemmCall& g : calls)
    out.push_back(
        {g, measuring(fmt::format("timing gemm {} x {} x {} of {}", g.m, g.n, g.k, g.what),
                      [&] { return time_gemm_call(g, t, comm, dev, alloc, cold_bytes); })});
  return out;
}

template std::vector<GemmTiming> time_gemm_calls<float>(const std::vector<GemmCall>&,
                                                        const TimingOptions&, MPI_Comm,
                                                        Kernels<float>&, TensorAllocator&, int64_t);
template std::vector<GemmTiming> time_gemm_calls<bf16>(const std::vector<GemmCall>&,
                                                       const TimingOptions&, MPI_Comm,
                                                       Kernels<bf16>&, TensorAllocator&, int64_t);

std::vector<GemmRate> gemm_rates(const std::vector<GemmTiming>& timings) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<double, double>>
      by_shape;  // flops, seconds
  for (const auto& t : timings) {
    auto& [flops, seconds] = by_shape[{t.call.m, t.call.n, t.call.k}];
    flops += t.call.flops();
    seconds += t.time_s;
  }
  std::vector<GemmRate> rates;
  for (const auto& [shape, fs] : by_shape)
    rates.push_back(
        {std::get<0>(shape), std::get<1>(shape), std::get<2>(shape), fs.first / fs.second / 1e12});
  return rates;
}

void print_gemm_timings(std::FILE* out, const std::vector<GemmTiming>& timings) {
  const auto op = [](Op o) { return o == Op::none ? 'N' : 'T'; };
  fmt::print(out, "# {:>6} {:>6} {:>6} {:>4} {:>10} {:>8}  {}\n", "m", "n", "k", "op", "time",
             "GFLOP/s", "first made by");
  fmt::print(out, "# {:>6} {:>6} {:>6} {:>4} {:>10} {:>8}\n", "", "", "", "", "(us)", "");
  for (const auto& t : timings) {
    const GemmCall& g = t.call;
    fmt::print(out, "  {:>6} {:>6} {:>6} {:>2}{}{} {:>10.1f} {:>8.1f}  {}{}\n", g.m, g.n, g.k,
               op(g.op_a), op(g.op_b), g.acc == Accumulate::add ? '+' : ' ', t.time_s * 1e6,
               g.flops() / t.time_s / 1e9, g.what,
               g.batch > 1 ? fmt::format(" (one of a batch of {})", g.batch) : "");
  }
  fmt::print(out, "\n");
}

}  // namespace shardplan
