// What `plan` prints and writes: the search's counts, the top layouts as a table, every rejected
// layout with its reason (--explain), and the chosen layout as a plan file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/plan.h"
#include "planner/search.h"

namespace shardplan {

// The layout as a compact string without the fields at their defaults (cp=1, ep=1, sp off, vpp=1,
// no recompute, the default schedule, the even split), which parse_layout_string reads back:
// "tp=8,pp=4,dp=2,zero=1,mbs=1".
std::string layout_label(const Layout& l);

// Shapes and layouts considered, invalid, over memory and fitting, and how fast they were searched:
// "searched 22161 layouts in 86.50 ms (256197 layouts/s on 2 threads): of those that fit, 310 timed
// in full, 9512 ruled out by their lower bound".
std::string format_counts(const SearchResult& r);

// The same counts, the speed and the top layouts with their predictions, for machines.
nlohmann::json search_to_json(const SearchResult& r);

// The top layouts: memory per device against what it can use, step time, MFU, exposed
// communication, pipeline bubble and the layout, wrapped to fit kTableColumns; `wide`: the layout
// first on one line, and TFLOP/s per device too.
std::string format_top(const SearchResult& r, bool wide = false);

// Every rejected layout, one a line: invalid shapes and layouts with the rule, then the layouts
// over memory with the item that overflows.
std::string format_rejections(const SearchResult& r);

// The winner as a plan file: model, cluster, training, layout and the estimate as its prediction.
Plan chosen_plan(const Model& model, const Cluster& cluster, const Training& training,
                 const Ranked& best);

}  // namespace shardplan
