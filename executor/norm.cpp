#include "executor/norm.h"

#include "executor/elementwise.h"

namespace shardplan {

namespace {

// A row's mean (0 for RMSNorm) and 1/σ.
template <class T>
struct RowStats {
  T mean;
  T rstd;
};

template <class T>
RowStats<T> row_stats(Norm kind, const T* x, int64_t hidden) {
  const T n = static_cast<T>(hidden);
  T mean = 0;
  if (kind == Norm::layernorm) {
    for (int64_t i = 0; i < hidden; ++i) mean += x[i];
    mean /= n;
  }
  T msd = 0;  // mean squared deviation from the mean
  for (int64_t i = 0; i < hidden; ++i) msd += (x[i] - mean) * (x[i] - mean);
  return {mean, ew::norm_rstd(msd / n, static_cast<T>(kNormEps))};
}

}  // namespace

template <class T>
void norm_forward(Norm kind, const T* x, const T* weight, const T* bias, int64_t rows,
                  int64_t hidden, T* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * hidden;
    const RowStats<T> st = row_stats(kind, xr, hidden);
    T* yr = y + r * hidden;
    for (int64_t i = 0; i < hidden; ++i)
      yr[i] = ew::norm_normalize(xr[i], st.mean, st.rstd) * weight[i] +
              (bias != nullptr ? bias[i] : T(0));
  }
}

template <class T>
void norm_backward(Norm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                   int64_t hidden, T* dx, T* dweight, T* dbias) {
  const T n = static_cast<T>(hidden);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * hidden, *dyr = dy + r * hidden;
    const RowStats<T> st = row_stats(kind, xr, hidden);
    T mean_g = 0, mean_g_xhat = 0;
    for (int64_t i = 0; i < hidden; ++i) {
      const T xhat = ew::norm_normalize(xr[i], st.mean, st.rstd);
      const T g = dyr[i] * weight[i];
      mean_g += g;
      mean_g_xhat += g * xhat;
      dweight[i] += dyr[i] * xhat;
      if (dbias != nullptr) dbias[i] += dyr[i];
    }
    mean_g = kind == Norm::layernorm ? mean_g / n : T(0);
    mean_g_xhat /= n;
    T* dxr = dx + r * hidden;
    for (int64_t i = 0; i < hidden; ++i) {
      const T xhat = ew::norm_normalize(xr[i], st.mean, st.rstd);
      dxr[i] += ew::norm_input_grad(dyr[i] * weight[i], xhat, st.rstd, mean_g, mean_g_xhat);
    }
  }
}

#define SHARDPLAN_INSTANTIATE(T)                                                           \
  template void norm_forward<T>(Norm, const T*, const T*, const T*, int64_t, int64_t, T*); \
  template void norm_backward<T>(Norm, const T*, const T*, const T*, int64_t, int64_t, T*, T*, T*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
