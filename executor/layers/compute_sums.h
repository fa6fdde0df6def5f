// Sums over rows that a CPU loop accumulates into a row of T (bias, norm-weight and position
// gradients) run in compute_t<T> and are stored once: in bf16, adding each row into the stored
// value would round at every row. Where T is its own compute type the sums are the row itself, so
// the fp32 loops allocate and copy nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "executor/bf16.h"

namespace shardplan {

template <class T>
class ComputeSums {
 public:
  using C = compute_t<T>;
  // Sums starting from out[0..n) (out may be null with n = 0).
  ComputeSums(T* out, int64_t n) : out_(out) {
    if constexpr (!kInPlace) sums_.assign(out, out + n);
  }
  C* data() {
    if constexpr (kInPlace)
      return out_;
    else
      return sums_.data();
  }
  // Writes the sums to `out`, rounded once.
  void store() {
    if constexpr (!kInPlace) std::copy(sums_.begin(), sums_.end(), out_);
  }

 private:
  static constexpr bool kInPlace = std::is_same_v<T, C>;
  T* out_;
  std::vector<C> sums_;
};

}  // namespace shardplan
