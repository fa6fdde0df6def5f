// Why the best layout wins and why its nearest alternatives lose, in numbers taken from the cost
// model's breakdowns: where each step's time goes, which collective got slower on which link.
#pragma once

#include <string>
#include <vector>

#include "planner/search.h"

namespace shardplan {

// A few sentences: where the winner's step time goes, then for the nearest alternatives (the
// runner-up, and the best layout one value away on each field) what makes each slower.
// `max_alternatives` bounds the second part.
std::vector<std::string> explain_ranking(const SearchResult& r, size_t max_alternatives = 5);

// One alternative against the winner, the two parts of the step that grew most with where they
// grew: "+1.59 s per step (+31.0%, 6.71 s against 5.12 s): exposed tensor-parallel communication
// +1.41 s (tp all_reduce spans 2 nodes on infiniband at 47.1 GB/s busbw, 1/9 of the 421.0 GB/s it
// gets on nvlink)".
std::string why_slower(const Estimate& loser, const Estimate& winner);

// The field and value an alternative differs from the winner in: "tp=16", "recompute=full".
std::string value_text(const Alternative& a);

}  // namespace shardplan
