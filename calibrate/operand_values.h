// The values calibration's operands hold: of the size a layer sees (|x| < 1, none zero, varied), so
// no kernel takes a special path and the tensor cores toggle as many bits as on a training step's
// data (constant operands ran an H100's layer GEMMs 7-10% faster: docs/measurements.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "executor/kernels.h"

namespace shardplan {

// A pattern of this many values, repeated: a host vector the size of the buffer would make the
// calibration of a 1B model's optimizer spend a minute in sin() and its copy (seen on an H100,
// 2026-11-26: --micro-batch 1 2 4 8 16 of a 1.3B GPT outran 120 s).
inline constexpr int64_t kPatternElements = int64_t{1} << 20;

template <class U>
std::vector<U> operand_pattern(int64_t n) {
  std::vector<U> v(static_cast<size_t>(std::min(n, kPatternElements)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = U(0.5f * std::sin(0.37f * static_cast<float>(i)) + 0.01f);
  return v;
}

// Fills `count` values of U at `device` (memory of `dev`) with the pattern, one host-to-device copy
// a repeat.
template <class U, class T>
void fill_operand(Kernels<T>& dev, U* device, int64_t count) {
  const std::vector<U> host = operand_pattern<U>(count);
  const auto size = static_cast<int64_t>(host.size());
  for (int64_t at = 0; at < count; at += size)
    dev.copy_from_host(device + at, host.data(),
                       std::min(size, count - at) * static_cast<int64_t>(sizeof(U)));
}

}  // namespace shardplan
