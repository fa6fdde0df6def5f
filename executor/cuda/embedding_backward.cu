// The word embedding's gradient (embedding_rows.h's embedding_rows_backward) as PyTorch computes it
// deterministically on a GPU (aten/src/ATen/native/cuda/Embedding.cu, embedding_dense_backward:
// sort the token ids, then reduce each run of equal ids): a stable radix sort of (token, position)
// pairs (cub::DeviceRadixSort, stable) puts each row's tokens together in token order; thread
// (run, column) then sums, in fp32 from the table element's value, the run's gradient rows in
// token order, and stores the sum once. So a table element is the CPU loop's sum in the CPU loop's
// order (embedding_rows.cpp), rounded once in bf16, and no two threads write one element.
#include <cub/device/device_radix_sort.cuh>

#include "executor/cuda/kernel_launch.h"
#include "executor/cuda/launch_config.cuh"

namespace shardplan::cuda {

namespace {

// The scratch: sorted tokens, positions 0..count−1 and their sorted order, then the sort's own.
struct Scratch {
  int32_t *sorted_tokens, *positions, *sorted_positions;
  void* sort;
  size_t sort_bytes;
};

constexpr int64_t kAlign = 256;  // cudaMalloc's alignment, kept for each piece

int64_t aligned(int64_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

size_t sort_bytes(int64_t count) {
  size_t bytes = 0;
  SHARDPLAN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), count));
  return bytes;
}

Scratch split(std::byte* p, int64_t count) {
  const int64_t ids = aligned(count * static_cast<int64_t>(sizeof(int32_t)));
  return {reinterpret_cast<int32_t*>(p), reinterpret_cast<int32_t*>(p + ids),
          reinterpret_cast<int32_t*>(p + 2 * ids), p + 3 * ids, sort_bytes(count)};
}

__global__ void iota_kernel(int32_t* p, int64_t n) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) p[e] = static_cast<int32_t>(e);
}

// Thread (s, i) for sorted position s that starts a run of one token in [row_begin, row_end).
template <class T>
__global__ void run_sums_kernel(const int32_t* sorted_tokens, const int32_t* sorted_positions,
                                int64_t count, const T* dout, int64_t row_begin, int64_t row_end,
                                int64_t hidden, T* dtable) {
  for (int64_t e = grid_index(); e < count * hidden; e += grid_stride()) {
    const int64_t s = e / hidden, i = e % hidden;
    const int32_t token = sorted_tokens[s];
    if ((s > 0 && sorted_tokens[s - 1] == token) || token < row_begin || token >= row_end) continue;
    T* out = dtable + (token - row_begin) * hidden + i;
    float sum = load(*out);
    for (int64_t u = s; u < count && sorted_tokens[u] == token; ++u)
      sum += load(dout[sorted_positions[u] * hidden + i]);
    *out = sum;
  }
}

}  // namespace

int64_t embedding_backward_scratch_bytes(int64_t count) {
  const int64_t ids = aligned(count * static_cast<int64_t>(sizeof(int32_t)));
  return 3 * ids + static_cast<int64_t>(sort_bytes(count));
}

template <class T>
void launch_embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout,
                                    int64_t row_begin, int64_t row_end, int64_t hidden, T* dtable,
                                    std::byte* scratch, cudaStream_t stream) {
  if (count * hidden == 0) return;
  Scratch s = split(scratch, count);
  iota_kernel<<<blocks_for(count), kThreads, 0, stream>>>(s.positions, count);
  SHARDPLAN_LAUNCH_CHECK(iota_kernel);
  SHARDPLAN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.sort, s.sort_bytes, tokens,
                                                       s.sorted_tokens, s.positions,
                                                       s.sorted_positions, count, 0, 32, stream));
  run_sums_kernel<<<blocks_for(count * hidden), kThreads, 0, stream>>>(
      s.sorted_tokens, s.sorted_positions, count, dout, row_begin, row_end, hidden, dtable);
  SHARDPLAN_LAUNCH_CHECK(run_sums_kernel);
}

#define SHARDPLAN_INSTANTIATE(T)                                                              \
  template void launch_embedding_rows_backward<T>(const int32_t*, int64_t, const T*, int64_t, \
                                                  int64_t, int64_t, T*, std::byte*, cudaStream_t);
SHARDPLAN_FOR_STORAGE_TYPES(SHARDPLAN_INSTANTIATE)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan::cuda
