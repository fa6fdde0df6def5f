#include "executor/layers/linear.h"

#include "executor/layers/compute_sums.h"

namespace shardplan {

// Which of a linear layer's operands a training step reads from memory (gemm_call.h's GemmSite):
// W in every GEMM, and in the weight gradient's dW and the x the forward saved, all last touched
// a pass over the other layers ago; x going forward and dy were just written by the layer's
// neighbour.
template <class T>
void linear_forward(Kernels<T>& dev, const char* name, const T* x, const T* w, const T* b,
                    int64_t n, int64_t in, int64_t out, T* y, MatmulStats* stats) {
  dev.gemm({.name = name, .call = "fwd", .cold_b = true}, matrix(y, n, out), matrix(x, n, in),
           Op::none, matrix(w, out, in), Op::transpose, Accumulate::overwrite, stats);
  if (b != nullptr) dev.bias_forward(y, b, n, out);
}

template <class T>
void bias_forward(T* y, const T* b, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = compute_t<T>(y[r * cols + c]) + b[c];
}

template <class T>
void residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i)
      y[r * cols + i] = compute_t<T>(y[r * cols + i]) +
                        (compute_t<T>(x[r * cols + i]) + (bias != nullptr ? bias[i] : T(0)));
}

namespace {

template <class T>
void weight_grad(Kernels<T>& dev, const char* name, const T* x, const T* dy, int64_t n, int64_t in,
                 int64_t out, T* dw, MatmulStats* stats) {
  dev.gemm({.name = name, .call = "wgrad", .cold_b = true, .cold_c = true}, matrix(dw, out, in),
           matrix(dy, n, out), Op::transpose, matrix(x, n, in), Op::none, Accumulate::add, stats);
}

}  // namespace

template <class T>
Buffer<T> DeferredWeightGrads<T>::take(Kernels<T>& dev, Buffer<T>* owner, const T* data,
                                       int64_t count, const char* what) {
  if (owner != nullptr && owner->data() == data && owner->size() == count) {
    alloc_->recharge(*owner, MemoryCategory::activations);
    return std::move(*owner);
  }
  Buffer<T> copy = alloc_->allocate_for_overwrite<T>(MemoryCategory::activations, count, what);
  dev.copy(copy.data(), data, count);
  return copy;
}

template <class T>
void DeferredWeightGrads<T>::keep(Kernels<T>& dev, const char* name, Buffer<T>* x_owner, const T* x,
                                  Buffer<T>* dy_owner, const T* dy, int64_t n, int64_t in,
                                  int64_t out, T* dw) {
  Buffer<T> kept_x = take(dev, x_owner, x, n * in, "W input");
  Buffer<T> kept_dy = take(dev, dy_owner, dy, n * out, "W output gradient");
  jobs_.push_back({name, std::move(kept_x), std::move(kept_dy), n, in, out, dw});
}

template <class T>
void DeferredWeightGrads<T>::run(Kernels<T>& dev, MatmulStats* stats) {
  for (const Job& j : jobs_)
    weight_grad(dev, j.name, j.x.data(), j.dy.data(), j.n, j.in, j.out, j.dw, stats);
  jobs_.clear();
}

template <class T>
void linear_backward(Kernels<T>& dev, const char* name, const T* x, const T* w, const T* dy,
                     int64_t n, int64_t in, int64_t out, T* dx, T* dw, T* db, MatmulStats* stats,
                     Deferral<T> defer) {
  dev.gemm({.name = name, .call = "dgrad", .cold_b = true}, matrix(dx, n, in), matrix(dy, n, out),
           Op::none, matrix(w, out, in), Op::none, Accumulate::overwrite, stats);
  if (db != nullptr) dev.bias_backward(dy, n, out, db);
  if (defer.to != nullptr)
    defer.to->keep(dev, name, defer.x, x, defer.dy, dy, n, in, out, dw);  // dy may move: last
  else
    weight_grad(dev, name, x, dy, n, in, out, dw, stats);
}

template <class T>
void bias_backward(const T* dy, int64_t rows, int64_t cols, T* db) {
  ComputeSums<T> sums(db, cols);
  compute_t<T>* sum = sums.data();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) sum[c] += dy[r * cols + c];
  sums.store();
}

#define SHARDPLAN_INSTANTIATE(T)                                                                   \
  template void linear_forward<T>(Kernels<T>&, const char*, const T*, const T*, const T*, int64_t, \
                                  int64_t, int64_t, T*, MatmulStats*);                             \
  template class DeferredWeightGrads<T>;                                                           \
  template void linear_backward<T>(Kernels<T>&, const char*, const T*, const T*, const T*,         \
                                   int64_t, int64_t, int64_t, T*, T*, T*, MatmulStats*,            \
                                   Deferral<T>);                                                   \
  template void bias_forward<T>(T*, const T*, int64_t, int64_t);                                   \
  template void residual_add<T>(T*, const T*, const T*, int64_t, int64_t);                         \
  template void bias_backward<T>(const T*, int64_t, int64_t, T*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
