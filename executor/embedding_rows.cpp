#include "executor/embedding_rows.h"

#include <algorithm>

namespace shardplan {

template <class T>
void embedding_rows(const int32_t* tokens, int64_t count, const T* table, ElementRange rows,
                    int64_t hidden, T* out) {
  for (int64_t t = 0; t < count; ++t)
    if (tokens[t] >= rows.begin && tokens[t] < rows.end)
      std::copy_n(table + (tokens[t] - rows.begin) * hidden, hidden, out + t * hidden);
}

template <class T>
void embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout, ElementRange rows,
                             int64_t hidden, T* dtable) {
  for (int64_t t = 0; t < count; ++t) {
    if (tokens[t] < rows.begin || tokens[t] >= rows.end) continue;
    T* row = dtable + (tokens[t] - rows.begin) * hidden;
    for (int64_t i = 0; i < hidden; ++i) row[i] += dout[t * hidden + i];
  }
}

template <class T>
void position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                            TokenPositions positions, int64_t first_row) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* pos = wpe + positions.of((first_row + r) % positions.seq) * hidden;
    for (int64_t i = 0; i < hidden; ++i) out[r * hidden + i] += pos[i];
  }
}

template <class T>
void position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                 TokenPositions positions, int64_t first_row) {
  for (int64_t r = 0; r < rows; ++r) {
    T* pos = dwpe + positions.of((first_row + r) % positions.seq) * hidden;
    for (int64_t i = 0; i < hidden; ++i) pos[i] += dout[r * hidden + i];
  }
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
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
