#include "executor/embedding_rows.h"

#include <algorithm>
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

// A table's gradient rows summed over the tokens in compute_t<T> and stored once: in bf16, adding
// each token into the table would round at every add. (For T = C the sums are the table itself.)
template <class T, class Add>
void sum_into_rows(T* table, int64_t table_rows, int64_t hidden, Add&& add) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    add(table);
  } else {
    std::vector<C> sums(table, table + table_rows * hidden);
    add(sums.data());
    std::copy(sums.begin(), sums.end(), table);
  }
}

template <class T>
void embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout, ElementRange rows,
                             int64_t hidden, T* dtable) {
  sum_into_rows(dtable, rows.count(), hidden, [&](compute_t<T>* sums) {
    for (int64_t t = 0; t < count; ++t) {
      if (tokens[t] < rows.begin || tokens[t] >= rows.end) continue;
      compute_t<T>* row = sums + (tokens[t] - rows.begin) * hidden;
      for (int64_t i = 0; i < hidden; ++i) row[i] += dout[t * hidden + i];
    }
  });
}

template <class T>
void position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                            TokenPositions positions, int64_t first_row) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* pos = wpe + positions.of((first_row + r) % positions.seq) * hidden;
    for (int64_t i = 0; i < hidden; ++i) out[r * hidden + i] = compute_t<T>(out[r * hidden + i]) + pos[i];
  }
}

template <class T>
void position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                 TokenPositions positions, int64_t first_row) {
  const int64_t table_rows = positions.seq * positions.cp;  // the whole sequence's positions
  sum_into_rows(dwpe, table_rows, hidden, [&](compute_t<T>* sums) {
    for (int64_t r = 0; r < rows; ++r) {
      compute_t<T>* pos = sums + positions.of((first_row + r) % positions.seq) * hidden;
      for (int64_t i = 0; i < hidden; ++i) pos[i] += dout[r * hidden + i];
    }
  });
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
