// Row-major matrix views over executor buffers (Eigen maps with an explicit row stride, so a head's
// columns inside a wider activation are a view too) and the one GEMM every layer calls, which
// counts its FLOPs and time so a step can report the rate its matmuls reach.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace shardplan {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixView = Eigen::Map<RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using ConstMatrixView = Eigen::Map<const RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// rows × cols starting at p, consecutive rows `row_stride` elements apart (default: packed).
template <class T>
MatrixView<T> view(T* p, int64_t rows, int64_t cols, int64_t row_stride = -1) {
  return MatrixView<T>(p, rows, cols, Eigen::OuterStride<>(row_stride < 0 ? cols : row_stride));
}
template <class T>
ConstMatrixView<T> view(const T* p, int64_t rows, int64_t cols, int64_t row_stride = -1) {
  return ConstMatrixView<T>(p, rows, cols,
                            Eigen::OuterStride<>(row_stride < 0 ? cols : row_stride));
}

struct GemmCall;  // gemm_call.h

// FLOPs and time spent in gemm(), summed by whoever passes it. Wall time is what a step's timeline
// shows; the thread's CPU time leaves out time the OS gave to other processes, so rates measured on
// a shared machine compare fairly with a GEMM benchmark measured the same way.
struct MatmulStats {
  double flops = 0;        // 2·m·n·k per call
  double seconds = 0;      // wall
  double cpu_seconds = 0;  // this thread's CPU time, where cpu_time asks for it
  // Read the thread's CPU clock around each call: a system call, 0.57 us here (10^6 calls of
  // clock_gettime(CLOCK_THREAD_CPUTIME_ID), 2026-11-24), 1% of an attention head's GEMM; the
  // benchmarks ask for it, a training step does not pay it.
  bool cpu_time = false;
  // When set, every GEMM a layer makes through Kernels::gemm_batched is appended, one per GEMM of a
  // batch (gemm_call.h): calibration's list of the GEMMs to time, and the tests' of a step's.
  std::vector<GemmCall>* calls = nullptr;
  double flop_per_s() const { return seconds > 0 ? flops / seconds : 0; }
  double flop_per_cpu_s() const { return cpu_seconds > 0 ? flops / cpu_seconds : 0; }
};

// This thread's CPU time in seconds (POSIX CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_seconds();

enum class Op { none, transpose };
enum class Accumulate { overwrite, add };

// c = op(a)·op(b)  or  c += op(a)·op(b). `stats` may be null.
template <class T>
void gemm(MatrixView<T> c, ConstMatrixView<T> a, Op op_a, ConstMatrixView<T> b, Op op_b,
          Accumulate acc, MatmulStats* stats);

}  // namespace shardplan
