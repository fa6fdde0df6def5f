// Which actions of a step's programs meet across ranks, and how long each rank waited in them for
// the others. Program's contract makes the k-th group action a member issues on a group the k-th
// of every other member, and pairs a recv with the send of the same tag from its peer, so the step
// simulator, the profile refit and the comparison of a run match them here alike.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
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

// Every recv of the step over `programs` with its send (the same tag, from its peer), where the
// sender has a program there: (recv, send) pairs in the programs' order.
std::vector<std::pair<ActionRef, ActionRef>> recv_sends(std::span<const Program> programs);

// What meets across the ranks in a step over some programs: found once, used for every step.
struct StepMatches {
  std::vector<std::vector<ActionRef>> collectives;        // collective_instances
  std::vector<std::pair<ActionRef, ActionRef>> messages;  // recv_sends
};
StepMatches match_actions(std::span<const Program> programs);

// For each program and action, the seconds its rank spent in it before the others it needs had
// reached theirs: in a group action, the latest start among the instance's members less its own;
// in a recv, its send's start (the message posted) less its own, where later; 0 otherwise and for
// a recv whose send has no program there; never more than the action's own time (the ranks'
// clocks start together only to within the step barrier's exit). `timings` (by program, by
// action) start each action where its rank reached it (a measured run's call entry). A blocking
// collective cannot move until every member has called it, nor a recv before its message is
// sent: this part of their time is the other ranks' lateness, not the transfer.
// `matches`: match_actions(programs).
std::vector<std::vector<double>> partner_wait_s(
    std::span<const Program> programs, const StepMatches& matches,
    const std::vector<std::vector<ActionTiming>>& timings);

}  // namespace shardplan
