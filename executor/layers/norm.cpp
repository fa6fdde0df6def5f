#include "executor/layers/norm.h"

#include "executor/bf16.h"
#include "executor/elementwise.h"
#include "executor/layers/compute_sums.h"

namespace shardplan {

namespace {

// A row's mean (0 for RMSNorm) and 1/σ, in compute_t<T>.
template <class T>
struct RowStats {
  compute_t<T> mean;
  compute_t<T> rstd;
};

template <class T>
RowStats<T> row_stats(Norm kind, const T* x, int64_t hidden) {
  using C = compute_t<T>;
  const C n = static_cast<C>(hidden);
  C mean = 0;
  if (kind == Norm::layernorm) {
    for (int64_t i = 0; i < hidden; ++i) mean += x[i];
    mean /= n;
  }
  C msd = 0;  // mean squared deviation from the mean
  for (int64_t i = 0; i < hidden; ++i) msd += (x[i] - mean) * (x[i] - mean);
  return {mean, ew::norm_rstd(msd / n, static_cast<C>(kNormEps))};
}

}  // namespace

template <class T>
void norm_forward(Norm kind, const T* x, const T* weight, const T* bias, int64_t rows,
                  int64_t hidden, T* y) {
  using C = compute_t<T>;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * hidden;
    const RowStats<T> st = row_stats(kind, xr, hidden);
    T* yr = y + r * hidden;
    for (int64_t i = 0; i < hidden; ++i)
      yr[i] = ew::norm_normalize<C>(xr[i], st.mean, st.rstd) * weight[i] +
              (bias != nullptr ? C(bias[i]) : C(0));
  }
}

template <class T>
void norm_backward(Norm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                   int64_t hidden, T* dx, T* dweight, T* dbias) {
  using C = compute_t<T>;
  const C n = static_cast<C>(hidden);
  // The weight and bias gradients sum over the rows in C and are stored once.
  ComputeSums<T> weight_sums(dweight, hidden), bias_sums(dbias, dbias != nullptr ? hidden : 0);
  C* const dw = weight_sums.data();
  C* const db = bias_sums.data();
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * hidden, *dyr = dy + r * hidden;
    const RowStats<T> st = row_stats(kind, xr, hidden);
    C mean_g = 0, mean_g_xhat = 0;
    for (int64_t i = 0; i < hidden; ++i) {
      const C xhat = ew::norm_normalize<C>(xr[i], st.mean, st.rstd);
      const C g = C(dyr[i]) * C(weight[i]);
      mean_g += g;
      mean_g_xhat += g * xhat;
      dw[i] += C(dyr[i]) * xhat;
      if (dbias != nullptr) db[i] += dyr[i];
    }
    mean_g = kind == Norm::layernorm ? mean_g / n : C(0);
    mean_g_xhat /= n;
    T* dxr = dx + r * hidden;
    for (int64_t i = 0; i < hidden; ++i) {
      const C xhat = ew::norm_normalize<C>(xr[i], st.mean, st.rstd);
      dxr[i] = C(dxr[i]) +
               ew::norm_input_grad<C>(C(dyr[i]) * C(weight[i]), xhat, st.rstd, mean_g, mean_g_xhat);
    }
  }
  weight_sums.store();
  bias_sums.store();
}

#define SHARDPLAN_INSTANTIATE(T)                                                           \
  template void norm_forward<T>(Norm, const T*, const T*, const T*, int64_t, int64_t, T*); \
  template void norm_backward<T>(Norm, const T*, const T*, const T*, int64_t, int64_t, T*, T*, T*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
