#include "executor/layers/activation.h"

#include "executor/bf16.h"
#include "executor/elementwise.h"

namespace shardplan {

template <class T>
void activation_forward(Activation kind, const T* u, int64_t rows, int64_t ffn, T* a) {
  using C = compute_t<T>;
  for (int64_t r = 0; r < rows; ++r) {
    T* ar = a + r * ffn;
    if (kind == Activation::gelu) {
      const T* ur = u + r * ffn;
      for (int64_t j = 0; j < ffn; ++j) ar[j] = ew::gelu<C>(ur[j]);
    } else {
      const T *gate = u + r * 2 * ffn, *up = gate + ffn;
      for (int64_t j = 0; j < ffn; ++j) ar[j] = ew::swiglu<C>(gate[j], up[j]);
    }
  }
}

template <class T>
void activation_backward(Activation kind, const T* u, const T* da, int64_t rows, int64_t ffn,
                         T* du) {
  using C = compute_t<T>;
  for (int64_t r = 0; r < rows; ++r) {
    const T* dar = da + r * ffn;
    if (kind == Activation::gelu) {
      const T* ur = u + r * ffn;
      T* dur = du + r * ffn;
      for (int64_t j = 0; j < ffn; ++j) dur[j] = C(dar[j]) * ew::gelu_grad<C>(ur[j]);
    } else {
      const T *gate = u + r * 2 * ffn, *up = gate + ffn;
      T *dgate = du + r * 2 * ffn, *dup = dgate + ffn;
      for (int64_t j = 0; j < ffn; ++j) {
        dgate[j] = ew::swiglu_grad_gate<C>(gate[j], up[j], dar[j]);
        dup[j] = ew::swiglu_grad_up<C>(gate[j], dar[j]);
      }
    }
  }
}

#define SHARDPLAN_INSTANTIATE(T)                                                   \
  template void activation_forward<T>(Activation, const T*, int64_t, int64_t, T*); \
  template void activation_backward<T>(Activation, const T*, const T*, int64_t, int64_t, T*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
