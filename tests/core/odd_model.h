// A model whose ZeRO units do not divide by 2 or 4: gpt-tiny with hidden 63 (3 heads of 21), MLP
// 126 and 3 layers, so that each layer holds an odd number of parameters (4h² + 9h + 2h·ffn + ffn
// with GPT-2's biases) and so does the whole model. The executor tests run it to check padded
// shards against the single-rank run and the cost model against the executor.
#pragma once

#include <string>

#include "core/presets.h"
#include "tests/core/reshaped_model.h"

namespace shardplan::test {

inline Model odd_model() {
  return reshaped(load_model(std::string(SHARDPLAN_SOURCE_DIR) + "/models/gpt-tiny.json"),
                  "gpt-tiny-odd", 3, 63, 3, 21, 126);
}

}  // namespace shardplan::test
