// The CPU backend with a GPU's attention batching: every kv group's heads in one batched GEMM and
// softmax call (Backend::attention_heads_per_call), so the CPU tests run the strides and offsets
// the CUDA backend's batched calls use.
#pragma once

#include "executor/cpu_kernels.h"

namespace shardplan::test {

template <class T>
class AllHeadsCpuKernels final : public CpuKernels<T> {
 public:
  int64_t attention_heads_per_call(int64_t heads) const override { return heads; }
};

}  // namespace shardplan::test
