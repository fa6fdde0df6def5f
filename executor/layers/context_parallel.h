// Context parallelism (cp > 1) as TransformerEngine's all-gather variant runs it (Megatron-Core's
// --cp-comm-type all_gather): each cp rank holds seq_len/cp tokens of every sequence of its
// micro-batch (LayerDims::position says which), computes their Q, K and V, all-gathers K and V of
// the whole sequence over the cp group before attention and, after attention's backward,
// reduce-scatters dK and dV so that each rank keeps its own tokens' share. Both collectives carry
// the schedule's kv_bytes (core/schedule_layer.cpp): 2 · batch · seq_len · kv_heads/tp · head_dim
// elements, the all-gather's output and the reduce-scatter's input. Everything here is the identity
// (no collective, no copy) when cp = 1.
#pragma once

#include <cstdint>

#include "executor/layers/attention.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

// This rank's tokens of a micro-batch of whole sequences (batch · kv_seq token ids, sequence after
// sequence; Megatron-LM's get_batch_on_this_cp_rank) into `local` (batch · seq): inputs and
// targets alike.
void take_local_tokens(const LayerDims& d, const int32_t* whole, int32_t* local);

// The keys and values attention reads: under cp the whole sequence's, all-gathered over
// LayerContext::cp into `gathered` [batch · kv_seq, 2 · kv_heads · head_dim] (buffers; rows in
// sequence order); otherwise qkv's own k and v columns.
template <class T>
KeyValues<const T*> gather_key_values(const LayerDims& d, LayerContext<T>& c, const T* qkv,
                                      Buffer<T>& gathered);

// Where attention's backward writes dK and dV: under cp `whole` [batch · kv_seq, 2 · kv_heads ·
// head_dim] (buffers), for every key of the sequence; otherwise dqkv's own k and v columns.
template <class T>
KeyValues<T*> key_value_grads(const LayerDims& d, LayerContext<T>& c, T* dqkv, Buffer<T>& whole);

// Under cp, every rank's `whole` summed over LayerContext::cp and this rank's tokens' rows of the
// sum written into dqkv's k and v columns (the reduce-scatter); nothing otherwise.
template <class T>
void reduce_key_value_grads(const LayerDims& d, LayerContext<T>& c, const Buffer<T>& whole,
                            T* dqkv);

}  // namespace shardplan
