// The planner tests' inputs: a preset model on dgx-h100 nodes with a global batch, a sequence
// length and the fields --fix pins.
#pragma once

#include <cstdint>
#include <string>

#include "core/presets.h"
#include "planner/search.h"

namespace shardplan {

struct PlannerCase {
  Model model;
  Cluster cluster;
  Training training;
  LayoutSpec fixed;

  Candidates enumerate() const { return enumerate_layouts(model, cluster, training, fixed); }
  SearchResult search(const SearchOptions& o = {}) const {
    return plan_search(model, cluster, training, fixed, o);
  }
};

inline PlannerCase planner_case(const std::string& model, int nodes, int64_t global_batch,
                                int64_t seq_len, const std::string& fix = "") {
  PlannerCase c{
      load_model(model), load_cluster("dgx-h100", nodes), {}, parse_layout_string(fix, "--fix")};
  c.training.global_batch = global_batch;
  c.training.seq_len = seq_len;
  return c;
}

}  // namespace shardplan
