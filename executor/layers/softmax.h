// Attention's causal softmax over blocks of scores (kernels.h's ScoreBlocks), forward and backward,
// as host loops: the CPU backend's kernels (the CUDA backend's are cuda/softmax_kernels.cu, with
// the same per-element math from elementwise.h).
#pragma once

#include "executor/kernels.h"

namespace shardplan {

// In place: each row i of each block becomes softmax(scale · scores) over keys 0..positions.of(i),
// with the row maximum subtracted first; the later keys are set to 0.
template <class T>
void causal_softmax_forward(T* scores, const ScoreBlocks& blocks, compute_t<T> scale,
                            TokenPositions positions);

// In place on `grads` (dP in, dScores out): dS = P ⊙ (dP − rowsum(P ⊙ dP)) · scale on the keys a
// row sees, 0 on the others.
template <class T>
void causal_softmax_backward(const T* probs, const ScoreBlocks& probs_blocks, T* grads,
                             const ScoreBlocks& grad_blocks, compute_t<T> scale,
                             TokenPositions positions);

}  // namespace shardplan
