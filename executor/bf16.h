// bfloat16 storage (Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep Learning Training", §2):
// the upper 16 bits of an IEEE fp32 — its sign, 8-bit exponent and 7 of its 23 mantissa bits —
// which mixed-precision training keeps weights, activations and gradients in, computing in fp32
// (Micikevicius et al. 2018, §3). The conversions compile for the host and, under nvcc, for the
// device, so the CPU backend rounds exactly as the CUDA kernels do and the CPU tests cover them.
// The layout is CUDA's __nv_bfloat16 (cuBLAS's CUDA_R_16BF, NCCL's ncclBfloat16).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "executor/host_device.h"

namespace shardplan {

namespace bf16_bits {

// The bits of an fp32 and back. On the host __builtin_bit_cast (GCC and Clang), what C++20's
// std::bit_cast is made of: nvcc compiles the kernel files as C++17, which has no std::bit_cast.
SHARDPLAN_HD inline uint32_t of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(uint32_t, f);
#endif
}
SHARDPLAN_HD inline float to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

// Round to nearest, ties to even, as __float2bfloat16_rn does: add half an ulp of the kept bits
// (0x7fff, plus one when the kept part is odd) and truncate. A NaN stays a (quiet) NaN rather than
// rounding into infinity.
SHARDPLAN_HD inline uint16_t round(float f) {
  const uint32_t u = of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace bf16_bits

// One bfloat16 value. Converts to and from float implicitly, so arithmetic on it is fp32
// arithmetic and every store rounds once; accumulate in compute_t<T> (below), never in bf16.
struct bf16 {
  uint16_t bits = 0;

  bf16() = default;
  SHARDPLAN_HD bf16(float f) : bits(bf16_bits::round(f)) {}  // NOLINT: a numeric conversion
  SHARDPLAN_HD operator float() const { return bf16_bits::to_float(uint32_t{bits} << 16); }
};
static_assert(sizeof(bf16) == 2 && std::is_trivially_copyable_v<bf16>);

// The type a storage type's arithmetic runs in: fp32 for bf16 (sums, norms, softmax, the loss and
// the optimizer), the type itself otherwise (fp32 training, the fp64 gradient checks).
template <class T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<bf16> {
  using type = float;
};
template <class T>
using compute_t = typename ComputeType<T>::type;

// The Dtype a buffer of T holds, for the collectives' element type.
template <class T>
constexpr Dtype dtype_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, bf16>);
  return std::is_same_v<T, float> ? Dtype::fp32 : Dtype::bf16;
}

}  // namespace shardplan
