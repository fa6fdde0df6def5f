// A step's timeline for the page, from a Chrome trace (docs/conventions.md: pid = rank, tid =
// stream): one lane per rank and stream, bars coloured by kind. A step of a large plan holds
// hundreds of thousands of actions; the page draws at most kMaxTimelineBars, so a busy lane is
// drawn at the resolution a screen shows (see timeline.cpp), and the page stays small.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace shardplan::report {

// Bars over every lane of one page: at about 25 bytes each, 40,000 bars are 1 MB of the page.
inline constexpr size_t kMaxTimelineBars = 40'000;
// Ranks drawn per timeline: a simulation with symmetry has one program per pipeline stage, and
// a measured run few ranks; past this the rest are left out and the page says so.
inline constexpr size_t kMaxTimelineRanks = 64;
// Points of a rank's activation line: a screen's width of them.
inline constexpr size_t kMaxCounterPoints = 400;

// {"groups": [{"label", "span_s", "ranks", "ranks_shown"}], "kinds": [...],
//  "lanes": [{"group", "label", "bars": [[start_s, end_s, kind index], ...]}],
//  "activations": [{"group", "label", "points": [[time_s, GiB], ...]}]}: each group (the
// trace's "predicted" and "measured" processes, or the whole trace) starts at 0 s, so that a
// predicted and a measured step share one time axis. `label` names the group of an unlabelled
// trace. `max_bars` is this trace's share of kMaxTimelineBars. "activations" holds each shown
// rank's counter track "activations held" (simulate --trace), at most kMaxCounterPoints a rank:
// past that, each of as many equal slices of the step keeps its largest value.
nlohmann::json timeline_from_trace(const nlohmann::json& trace, const std::string& label,
                                   size_t max_bars);

}  // namespace shardplan::report
