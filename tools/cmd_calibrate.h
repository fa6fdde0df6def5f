// `shardplan calibrate`: measure this machine's GEMM rates, memory bandwidth and collectives and
// write them as a profile that overlays a cluster description (`--profile` on plan, estimate,
// simulate).
#pragma once

#include "tools/subcommand.h"

namespace shardplan::cli {

Subcommand add_calibrate(CLI::App& root);

}  // namespace shardplan::cli
