// The model, cluster and training the layout targets resolve against, as the CLI resolves a
// layout right after reading it (tools/cli_inputs.cpp, resolve_plan). Mixtral on four DGX H100
// nodes, so that every setting means something: GQA heads for tp, experts for ep, 32 layers for
// pp, vpp and uneven stages, 32 devices for dp.
#pragma once

#include <string>

#include "core/layout.h"
#include "core/presets.h"
#include "core/training.h"

namespace shardplan::fuzz {

struct LayoutContext {
  Model model = load_model("mixtral-8x7b");
  Cluster cluster = load_cluster("dgx-h100", 4);
  Training training = [] {
    Training t;
    t.global_batch = 256;
    t.seq_len = 4096;
    return t;
  }();
};

// Read once per process: the presets are not what is fuzzed.
inline const LayoutContext& layout_context() {
  static const LayoutContext context;
  return context;
}

// resolve_layout (which validates) and the compact string the reports print.
inline void resolve_and_print(const LayoutSpec& spec, const std::string& source) {
  const LayoutContext& c = layout_context();
  Training training = c.training;
  to_string(resolve_layout(spec, c.model, c.cluster, training, source));
}

}  // namespace shardplan::fuzz
