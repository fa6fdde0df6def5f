// `shardplan plan`: search every layout of a model on a cluster, rank what fits, explain the
// winner, and write it as a plan file and as Megatron-LM flags or a DeepSpeed config.
#pragma once

#include "tools/subcommand.h"

namespace shardplan::cli {

Subcommand add_plan(CLI::App& root);

}  // namespace shardplan::cli
