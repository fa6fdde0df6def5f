// The Ultra-Scale Playbook's 1B (data/fidelity/ultrascale_dev.json's models: 16 layers, hidden
// 2048, 32 heads, MLP 8192, vocabulary 131072) as a Llama: a layer costs 4·2048² + 3·8192·2048 =
// 67.1 M weights, the head 268.4 M, four layers' worth, so nanotron's cost-balanced split loads
// its first pipeline ranks and leaves its last ones without layers (core/stage_split.h).
#pragma once

#include "core/presets.h"
#include "tests/core/reshaped_model.h"

namespace shardplan::test {

inline Model ultrascale_1b() {
  Model m = reshaped(load_model("llama3-8b"), "ultrascale-1b", 16, 2048, 32, 64, 8192);
  m.vocab = 131072;
  return m;
}

}  // namespace shardplan::test
