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

}  // namespace shardplan
