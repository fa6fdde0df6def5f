// Launch shapes, loads in the compute type and block-wide reductions shared by the kernel files.
#pragma once

#include <algorithm>
#include <cstdint>

#include "executor/bf16.h"
#include "executor/cuda/cuda_check.h"

// The storage types every templated launcher is instantiated for: X(float) X(bf16).
#define SHARDPLAN_FOR_STORAGE_TYPES(X) X(float) X(::shardplan::bf16)

namespace shardplan::cuda {

// A stored element in the kernels' compute type, fp32 (exact for bf16). Stores assign the fp32
// result, which rounds once for bf16 (bf16.h's conversion, as the CPU backend's stores).
template <class T>
__device__ inline float load(T x) {
  return static_cast<float>(x);
}

constexpr int kThreads = 256;  // threads per block, a multiple of the 32-thread warp

// Blocks for a grid-stride loop over n elements (capped: the loop covers the rest).
inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 1 << 20));
}

// The first index of this thread in a grid-stride loop, and the stride.
__device__ inline int64_t grid_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class T, class Op>
__device__ T warp_reduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Every thread of the block gets op over the block's values; `identity` is op's neutral value.
// `shared` holds 32 values. Call from every thread of a kThreads block.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T identity, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce(v, op);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? shared[lane] : identity;
  if (warp == 0) v = warp_reduce(v, op);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  const T result = shared[0];
  __syncthreads();  // shared may be reused at once
  return result;
}

}  // namespace shardplan::cuda
