// `shardplan validate`'s output: a table per set for people and the same figures as JSON
// (snake_case keys, units in the names: docs/conventions.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "validate/set_score.h"

namespace shardplan {

// How every error is defined, printed once at the top of the table and carried in the JSON.
inline constexpr const char* kErrorDefinition =
    "error = predicted / measured step time - 1 (a throughput set: the step time its tokens/s "
    "imply); positive = predicted too slow";

nlohmann::json scores_to_json(const std::vector<SetScores>& sets);
// Fits kTableColumns (sentences wrapped or cut in two) unless `wide` (--wide: one line each).
std::string format_scores_table(const std::vector<SetScores>& sets, bool wide = false);

// Every row of a set beside its prediction (`validate --rows`): where it is in the file, its group,
// layout and framework, measured and predicted step time and memory, the error, whether it was
// predicted to fit and whether it ran, or why it was refused. For finding which rows a slice's
// error comes from.
nlohmann::json rows_to_json(const FidelitySet& s, const std::vector<PricedRow>& priced);

}  // namespace shardplan
