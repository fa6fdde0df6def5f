// The embedding layer's memory moves as host loops, the CPU backend's kernels (the CUDA backend's
// are in cuda/elementwise_kernels.cu and cuda/embedding_backward.cu): rows of a table picked by
// token id, and the position embedding added by each token's position in its whole sequence.
#pragma once

#include "executor/kernels.h"

namespace shardplan {

// out[t] = table[tokens[t] − rows.begin] for the `count` tokens whose id is in `rows` (the table
// holds those rows, `hidden` wide); the other tokens' rows of out are left as they are.
template <class T>
void embedding_rows(const int32_t* tokens, int64_t count, const T* table, ElementRange rows,
                    int64_t hidden, T* out);

// dtable[tokens[t] − rows.begin] += dout[t] for the tokens in `rows`.
template <class T>
void embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout, ElementRange rows,
                             int64_t hidden, T* dtable);

// out[r] += wpe[positions.of((first_row + r) mod positions.seq)] for r < rows: row r is token
// first_row + r of this rank's micro-batch, sequence after sequence.
template <class T>
void position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                            TokenPositions positions, int64_t first_row);

// dwpe[positions.of((first_row + r) mod positions.seq)] += dout[r].
template <class T>
void position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                 TokenPositions positions, int64_t first_row);

}  // namespace shardplan
