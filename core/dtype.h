// Numeric formats used for weights, gradients and compute, and their sizes.
#pragma once

#include <cstdint>

#include "core/enum_names.h"

namespace shardplan {

enum class Dtype { fp32, tf32, bf16, fp16 };

inline constexpr EnumNames<Dtype, 4> kDtypeNames{
    {{Dtype::fp32, "fp32"}, {Dtype::tf32, "tf32"}, {Dtype::bf16, "bf16"}, {Dtype::fp16, "fp16"}}};

// Bytes one element occupies in memory (tf32 is stored as fp32).
constexpr int64_t dtype_bytes(Dtype d) {
  return (d == Dtype::bf16 || d == Dtype::fp16) ? 2 : 4;
}

// How the linear layers' GEMMs run in FP8 (Transformer Engine recipes; Micikevicius et al. 2022,
// "FP8 Formats for Deep Learning": E4M3 forward, E5M2 gradients), each linear's input, weight and
// output gradient quantized before its GEMMs; everything else stays in the compute dtype.
//   none     the compute dtype throughout;
//   delayed  per-tensor scales from the amax history of earlier steps (TE DelayedScaling, the
//            Hopper default): the cast computes the amax it records, one pass;
//   current  per-tensor scales from the tensor's own amax (TE Float8CurrentScaling, "FP8-CS"):
//            an amax pass before the cast;
//   mxfp8    a power-of-two scale per block of 32 elements (OCP MX formats; TE MXFP8BlockScaling,
//            Blackwell's tensor cores only).
enum class Fp8Recipe { none, delayed, current, mxfp8 };

// Bytes one FP8 quantization writes per element: the row-wise copy one GEMM reads, and, where the
// other GEMM of its pair needs it, a column-wise (transposed) copy, one byte each. Hopper's FP8
// tensor-core GEMMs take only the TN layout (`tn_only`: TE's fp8_cast_transpose writes both);
// Blackwell's take any layout, so a per-tensor scale serves both GEMMs from one copy
// (TE's is_non_tn_fp8_gemm_supported, compute capability 10.0 on). MXFP8's column-wise copy has its
// own scales along the other axis, so it always writes both, each with a 1-byte E8M0 scale per 32
// elements (OCP Microscaling Formats v1.0 §5.2).
constexpr double fp8_copies_bytes(Fp8Recipe r, bool tn_only) {
  if (r == Fp8Recipe::none) return 0;
  if (r == Fp8Recipe::mxfp8) return 2 + 2.0 / 32;
  return tn_only ? 2 : 1;
}

inline constexpr EnumNames<Fp8Recipe, 4> kFp8RecipeNames{{{Fp8Recipe::none, "none"},
                                                          {Fp8Recipe::delayed, "delayed"},
                                                          {Fp8Recipe::current, "current"},
                                                          {Fp8Recipe::mxfp8, "mxfp8"}}};
// Megatron-LM's names for them (--fp8-recipe; "tensorwise" is current scaling).
inline constexpr EnumNames<Fp8Recipe, 3> kMegatronFp8RecipeNames{
    {{Fp8Recipe::delayed, "delayed"},
     {Fp8Recipe::current, "tensorwise"},
     {Fp8Recipe::mxfp8, "mxfp8"}}};

}  // namespace shardplan
