// A preset model with another shape, for tests that need a model no preset describes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/model.h"

namespace shardplan::test {

// `m` renamed, with `layers` layers of width `hidden`, `heads` heads (as many K/V heads) of
// `head_dim` and an MLP of `ffn`.
inline Model reshaped(Model m, std::string name, int layers, int64_t hidden, int heads,
                      int64_t head_dim, int64_t ffn) {
  m.name = std::move(name);
  m.num_layers = layers;
  m.hidden = hidden;
  m.num_heads = m.num_kv_heads = heads;
  m.head_dim = head_dim;
  m.ffn_hidden = ffn;
  return m;
}

}  // namespace shardplan::test
