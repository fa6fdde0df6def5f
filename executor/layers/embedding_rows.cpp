#include "executor/layers/embedding_rows.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "executor/bf16.h"

namespace shardplan {

template <class T>
void embedding_rows(const int32_t* tokens, int64_t count, const T* table, ElementRange rows,
                    int64_t hidden, T* out) {
  for (int64_t t = 0; t < count; ++t)
    if (tokens[t] >= rows.begin && tokens[t] < rows.end)
      std::copy_n(table + (tokens[t] - rows.begin) * hidden, hidden, out + t * hidden);
}

// dtable[target(r)] += dout[r] for every row r of dout with a target (target(r) < 0: none), each
// table row's additions in the order of r. For T = C the rows add into the table directly; in bf16,
// where that would round at every addition, the rows of each target are grouped (a stable sort of
// r by target, as PyTorch's embedding_dense_backward and cuda/embedding_backward.cu do) and summed
// in fp32 from the table's value, stored once: the same sum in the same order, held for one row
// at a time.
template <class T, class Target>
void add_rows_by_target(const T* dout, int64_t rows, int64_t hidden, T* dtable, Target&& target) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t to = target(r);
      if (to < 0) continue;
      for (int64_t i = 0; i < hidden; ++i) dtable[to * hidden + i] += dout[r * hidden + i];
    }
  } else {
    std::vector<int64_t> order;
    for (int64_t r = 0; r < rows; ++r)
      if (target(r) >= 0) order.push_back(r);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return target(a) < target(b); });
    std::vector<C> sum(static_cast<size_t>(hidden));
    for (size_t run = 0; run < order.size();) {
      T* row = dtable + target(order[run]) * hidden;
      std::copy(row, row + hidden, sum.begin());
      size_t next = run;
      for (; next < order.size() && target(order[next]) == target(order[run]); ++next)
        for (int64_t i = 0; i < hidden; ++i)
          sum[static_cast<size_t>(i)] += dout[order[next] * hidden + i];
      std::copy(sum.begin(), sum.end(), row);
      run = next;
    }
  }
}

template <class T>
void embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout, ElementRange rows,
                             int64_t hidden, T* dtable) {
  add_rows_by_target(dout, count, hidden, dtable, [&](int64_t t) -> int64_t {
    return tokens[t] >= rows.begin && tokens[t] < rows.end ? tokens[t] - rows.begin : -1;
  });
}

template <class T>
void position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                            TokenPositions positions, int64_t first_row) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* pos = wpe + positions.of((first_row + r) % positions.seq) * hidden;
    for (int64_t i = 0; i < hidden; ++i)
      out[r * hidden + i] = compute_t<T>(out[r * hidden + i]) + pos[i];
  }
}

template <class T>
void position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                 TokenPositions positions, int64_t first_row) {
  add_rows_by_target(dout, rows, hidden, dwpe,
                     [&](int64_t r) { return positions.of((first_row + r) % positions.seq); });
}

#define SHARDPLAN_INSTANTIATE(T)                                                                 \
  template void embedding_rows<T>(const int32_t*, int64_t, const T*, ElementRange, int64_t, T*); \
  template void embedding_rows_backward<T>(const int32_t*, int64_t, const T*, ElementRange,      \
                                           int64_t, T*);                                         \
  template void position_embedding_add<T>(T*, int64_t, int64_t, const T*, TokenPositions,        \
                                          int64_t);                                              \
  template void position_embedding_backward<T>(const T*, int64_t, int64_t, T*, TokenPositions,   \
                                               int64_t);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
