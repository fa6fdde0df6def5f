// The first stage's input layer: token embedding, vocabulary-parallel over the tp ranks (each holds
// a range of wte's rows and contributes the rows of the tokens in its range, zeros elsewhere; the
// partial sums are all-reduced: Shoeybi et al. 2019, §3), plus the learned position embedding.
#pragma once

#include <cstdint>

#include "executor/layers/layer_context.h"

namespace shardplan {

// Collectives on LayerContext::tp when tp > 1: forward all-reduce (SP: reduce-scatter) of the
// [tokens, hidden] partial sums; backward [SP: all-gather dout].
//
// out[local_tokens, hidden] (activations: the first layer's saved input) = wte[token] +
// wpe[position] (the token's position in the whole sequence under context parallelism). tokens:
// every token of the micro-batch (this cp rank's); vocab: this rank's rows of wte (wte_local holds
// them).
template <class T>
Buffer<T> embedding_forward(const LayerDims& d, const int32_t* tokens, const T* wte_local,
                            ElementRange vocab, const T* wpe, LayerContext<T>& c);

// dwte_local and dwpe += from dout[local_tokens, hidden]. Under sequence parallelism dwpe holds
// this rank's tokens only: the caller all-reduces it over tp with the other replicated parameters.
template <class T>
void embedding_backward(const LayerDims& d, const int32_t* tokens, const T* dout,
                        ElementRange vocab, T* dwte_local, T* dwpe, LayerContext<T>& c);

}  // namespace shardplan
