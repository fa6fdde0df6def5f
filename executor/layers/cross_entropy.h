// Vocabulary-parallel cross-entropy in pieces (Megatron-LM's VocabParallelCrossEntropy, after
// Shoeybi et al. 2019, §3: each rank keeps the logits of its vocabulary range and only per-token
// scalars cross the tp group). Between the pieces the caller all-reduces: the row maxima (max),
// then the target logits and the sums of exponentials (sum). With tp = 1 the pieces are plain
// softmax cross-entropy.
#pragma once

#include <cstdint>

#include "executor/state/param_layout.h"

namespace shardplan {

// row_max[r] = max over this rank's columns of logits[r, ·].   → all-reduce max
template <class T>
void logits_row_max(const T* logits, int64_t rows, int64_t cols, T* row_max);

// target_logit[r] = logits[r, targets[r] − vocab.begin] when this rank holds the target, else 0.
template <class T>
void logits_target(const T* logits, const int32_t* targets, int64_t rows, int64_t cols,
                   ElementRange vocab,
                   T* target_logit);  //                                       → all-reduce sum

// In place: logits[r, j] ← exp(logits[r, j] − row_max[r]); sum_exp[r] = their sum.  → all-reduce
// sum
template <class T>
void logits_exponentiate(T* logits, int64_t rows, int64_t cols, const T* row_max, T* sum_exp);

// Σ_r loss[r] in double, loss[r] = log sum_exp[r] + row_max[r] − target_logit[r].
template <class T>
double token_loss_sum(const T* row_max, const T* sum_exp, const T* target_logit, int64_t rows);

// In place: exp_logits[r, j] ← (exp_logits[r, j]/sum_exp[r] − [j + vocab.begin =
// targets[r]])·scale, the gradient of scale·Σ_r loss[r] with respect to the logits.
template <class T>
void logits_backward(T* exp_logits, const T* sum_exp, const int32_t* targets, int64_t rows,
                     int64_t cols, ElementRange vocab, T scale);

}  // namespace shardplan
