#include "executor/layers/matmul.h"

#include <cassert>
#include <chrono>
#include <ctime>

namespace shardplan {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

namespace {
template <class T, class A, class B>
void assign(MatrixView<T>& c, const A& a, const B& b, Accumulate acc) {
  if (acc == Accumulate::add)
    c.noalias() += a * b;
  else
    c.noalias() = a * b;
}
}  // namespace

template <class T>
void gemm(MatrixView<T> c, ConstMatrixView<T> a, Op op_a, ConstMatrixView<T> b, Op op_b,
          Accumulate acc, MatmulStats* stats) {
  const int64_t m = op_a == Op::none ? a.rows() : a.cols();
  const int64_t k = op_a == Op::none ? a.cols() : a.rows();
  const int64_t n = op_b == Op::none ? b.cols() : b.rows();
  assert(c.rows() == m && c.cols() == n);
  assert((op_b == Op::none ? b.rows() : b.cols()) == k);
  const auto start = std::chrono::steady_clock::now();
  const bool cpu_time = stats != nullptr && stats->cpu_time;
  const double cpu_start = cpu_time ? thread_cpu_seconds() : 0;
  if (op_a == Op::none && op_b == Op::none)
    assign(c, a, b, acc);
  else if (op_a == Op::none)
    assign(c, a, b.transpose(), acc);
  else if (op_b == Op::none)
    assign(c, a.transpose(), b, acc);
  else
    assign(c, a.transpose(), b.transpose(), acc);
  if (stats != nullptr) {
    stats->seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (cpu_time) stats->cpu_seconds += thread_cpu_seconds() - cpu_start;
    stats->flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
}

template void gemm<float>(MatrixView<float>, ConstMatrixView<float>, Op, ConstMatrixView<float>, Op,
                          Accumulate, MatmulStats*);
template void gemm<double>(MatrixView<double>, ConstMatrixView<double>, Op, ConstMatrixView<double>,
                           Op, Accumulate, MatmulStats*);

}  // namespace shardplan
