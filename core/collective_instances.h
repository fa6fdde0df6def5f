// The group actions of a step matched across ranks, and how long each rank waited in them for its
// group. Program's contract makes the k-th group action a member issues on a group the k-th of
// every other member, so the step simulator, the profile refit and the comparison of a run find
// the same instances here.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/schedule.h"

namespace shardplan {

// An action of one of a step's programs: its index among the programs, and in its program.
struct ActionRef {
  size_t program = 0;
  uint32_t action = 0;
};

// Every instance of the step's group actions over `programs`, with those of its members that have
// a program there, in the programs' order. A group action whose group has no other member there (a
// group of one; under symmetry, one whose other members are mirrored) is in none.
std::vector<std::vector<ActionRef>> collective_instances(std::span<const Program> programs);

// For each program and action, the seconds its rank spent in a group action before the group's
// last member reached it: the latest start among the instance's members less its own start, with
// `timings` (by program, by action) starting each group action where its rank reached it (a
// measured run's call entry); 0 outside group actions. A blocking collective cannot move until
// every member has called it, so this part of its time is the ranks' skew, not the transfer.
std::vector<std::vector<double>> group_wait_s(
    std::span<const Program> programs, const std::vector<std::vector<ActionTiming>>& timings);

}  // namespace shardplan
