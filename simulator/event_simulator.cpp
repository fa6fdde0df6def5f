// The step simulation. Each stream runs its actions in program order; an action starts when its
// stream is free and its dependencies are done; a recv spans its send's transfer (sends are eager:
// buffered, they complete without waiting for the receiver, as the blocking batched isend/irecv of
// Megatron-LM's p2p_communication); a collective starts on all members when the last one arrives.
// Streams that cannot go on park on what they wait for and are woken when it completes, so the
// run costs O(actions + dependencies); streams still parked at the end are a deadlock.
#include "simulator/event_simulator.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <unordered_map>

#include "core/action_matching.h"

namespace shardplan {
namespace {

enum State : uint8_t { kPending, kArrived, kDone };

// One collective across its simulated members.
struct Instance {
  int needed = 0;
  int arrived = 0;
  double ready_s = 0;
  int64_t binder = -1;
  std::vector<int64_t> members;  // global action ids
};

struct StreamState {
  std::vector<uint32_t> actions;  // program indices of this stream's actions, in order
  size_t pos = 0;
  double free_s = 0;
  int64_t last = -1;  // global id of the stream's last finished action
  int next_waiter = -1;
  int64_t parked_on = -1;
};

struct Engine {
  const StepPrograms& step;
  const ActionPricer& pricer;
  StreamExecution execution;
  std::vector<int64_t> offset;  // global id = offset[program] + action index
  std::unordered_map<int64_t, size_t> program_of_rank;
  std::vector<int64_t> match;  // recv: its send; group action: its instance (−1: runs alone)
  std::vector<Instance> instances;
  std::vector<double> start, end;
  std::vector<double> arrival_s;  // group action or recv: when its stream reached it
  std::vector<int64_t> binder;    // the action whose end set this one's start (−1: time 0)
  std::vector<State> state;
  std::vector<int> waiters;          // first stream parked on each action
  std::vector<StreamState> streams;  // program · kNumStreams + stream
  std::vector<int> ready;
  std::vector<std::string> errors;

  Engine(const StepPrograms& s, const ActionPricer& p, StreamExecution x)
      : step(s), pricer(p), execution(x) {}

  size_t program_of(int64_t g) const {
    return static_cast<size_t>(std::upper_bound(offset.begin(), offset.end(), g) - offset.begin() -
                               1);
  }
  const Action& action(int64_t g) const {
    const size_t i = program_of(g);
    return step.programs[i].actions[static_cast<size_t>(g - offset[i])];
  }
  // In program order a send is posted and its rank goes on (MPI_Isend): what follows it waits for
  // its start, not its transfer.
  bool posted(const Action& a) const {
    return execution == StreamExecution::program_order && a.kind == ActionKind::send;
  }
  // The queue an action runs on: its stream, or under program order the rank's one thread.
  int stream_id(size_t program, Stream s) const {
    const Stream queue = execution == StreamExecution::program_order ? Stream::compute : s;
    return static_cast<int>(program) * kNumStreams + static_cast<int>(queue);
  }

  void setup();
  void match_sends();
  void match_collectives();
  void run();
  void advance(int sid);
  void complete(int64_t g, double start_s, double end_s, int64_t bind);
  bool complete_instance(int64_t inst, int current);
  void park(int sid, int64_t g);
  std::string describe(int64_t g) const;
  std::vector<StreamWait> deadlock() const;
  std::vector<CriticalAction> critical_path(std::array<double, kNumStreams>& by_stream) const;
};

void Engine::setup() {
  const auto& programs = step.programs;
  int64_t total = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    offset.push_back(total);
    total += static_cast<int64_t>(programs[i].actions.size());
    program_of_rank[programs[i].rank] = i;
  }
  match.assign(total, -1);
  start.assign(total, 0);
  end.assign(total, 0);
  arrival_s.assign(total, 0);
  binder.assign(total, -1);
  state.assign(total, kPending);
  waiters.assign(total, -1);
  streams.resize(programs.size() * kNumStreams);
  for (size_t i = 0; i < programs.size(); ++i)
    for (uint32_t j = 0; j < programs[i].actions.size(); ++j)
      streams[stream_id(i, programs[i].actions[j].stream)].actions.push_back(j);
  match_sends();
  match_collectives();
}

void Engine::match_sends() {
  for (const auto& [recv, send] : recv_sends(step.programs))
    match[offset[recv.program] + recv.action] = offset[send.program] + send.action;
}

// Only members that are simulated take part (under symmetry the others mirror the program that
// stands for them); the instance waits for every one of them, so one that never issues its action
// is a deadlock reported with the ranks missing.
void Engine::match_collectives() {
  for (const std::vector<ActionRef>& refs : collective_instances(step.programs)) {
    const Program& p = step.programs[refs.front().program];
    const Action& first = p.actions[refs.front().action];
    const auto& group = p.members(first);
    const int needed = static_cast<int>(std::count_if(
        group.begin(), group.end(), [&](int64_t r) { return program_of_rank.count(r) > 0; }));
    Instance inst{needed, 0, 0, -1, {}};
    for (const ActionRef m : refs) {
      const int64_t g = offset[m.program] + m.action;
      const Action& a = action(g);
      if (first.kind != a.kind || first.op != a.op || first.bytes != a.bytes ||
          first.params != a.params)
        errors.push_back(
            "collective mismatch: " + describe(offset[refs.front().program] + refs.front().action) +
            " meets " + describe(g));
      inst.members.push_back(g);
      match[g] = static_cast<int64_t>(instances.size());
    }
    instances.push_back(std::move(inst));
  }
}

void Engine::run() {
  for (int sid = static_cast<int>(streams.size()) - 1; sid >= 0; --sid)
    if (!streams[sid].actions.empty()) ready.push_back(sid);
  while (!ready.empty()) {
    const int sid = ready.back();
    ready.pop_back();
    advance(sid);
  }
}

void Engine::advance(int sid) {
  StreamState& s = streams[sid];
  const size_t pi = static_cast<size_t>(sid / kNumStreams);
  const Program& prog = step.programs[pi];
  s.parked_on = -1;
  for (; s.pos < s.actions.size(); ++s.pos) {
    const uint32_t idx = s.actions[s.pos];
    const int64_t g = offset[pi] + idx;
    if (state[g] == kDone) {  // completed with its collective
      s.free_s = end[g];
      s.last = g;
      continue;
    }
    if (state[g] == kArrived) return;  // the instance completes it
    const Action& a = prog.actions[idx];
    double ready_s = s.free_s;
    int64_t bind = s.last;
    for (uint32_t d : prog.deps_of(a)) {
      const int64_t gd = offset[pi] + d;
      if (state[gd] != kDone) return park(sid, gd);
      const bool post = posted(prog.actions[d]);  // done at its start: bound by what started it
      const double done_s = post ? start[gd] : end[gd];
      if (done_s > ready_s) ready_s = done_s, bind = post ? binder[gd] : gd;
    }
    if (a.kind == ActionKind::recv) {
      arrival_s[g] = ready_s;
      const int64_t send = match[g];
      if (send < 0) return;  // no send will ever come: reported as a deadlock
      if (state[send] != kDone) return park(sid, send);
      const double begin_s = std::max(ready_s, start[send]);
      if (end[send] > ready_s) ready_s = end[send], bind = send;
      complete(g, begin_s, ready_s, bind);
    } else if (match[g] >= 0) {
      Instance& inst = instances[match[g]];
      state[g] = kArrived;
      arrival_s[g] = ready_s;
      if (++inst.arrived == 1 || ready_s > inst.ready_s) inst.ready_s = ready_s, inst.binder = bind;
      if (!complete_instance(match[g], sid)) return;
    } else {
      complete(g, ready_s, ready_s + pricer.duration_s(prog, a), bind);
    }
    if (posted(a)) continue;
    s.free_s = end[g];
    s.last = g;
  }
}

void Engine::complete(int64_t g, double start_s, double end_s, int64_t bind) {
  start[g] = start_s;
  end[g] = end_s;
  binder[g] = bind;
  state[g] = kDone;
  for (int w = waiters[g]; w >= 0;) {
    const int next = streams[w].next_waiter;
    streams[w].next_waiter = -1;
    ready.push_back(w);
    w = next;
  }
  waiters[g] = -1;
}

bool Engine::complete_instance(int64_t i, int current) {
  const Instance& inst = instances[i];
  if (inst.arrived < inst.needed) return false;
  double duration_s = 0;
  for (int64_t g : inst.members) {
    const size_t pi = program_of(g);
    duration_s = std::max(duration_s, pricer.duration_s(step.programs[pi], action(g)));
  }
  for (int64_t g : inst.members) {
    complete(g, inst.ready_s, inst.ready_s + duration_s, inst.binder);
    const int sid = stream_id(program_of(g), action(g).stream);
    if (sid != current) ready.push_back(sid);
  }
  return true;
}

void Engine::park(int sid, int64_t g) {
  streams[sid].parked_on = g;
  streams[sid].next_waiter = waiters[g];
  waiters[g] = sid;
}

std::string Engine::describe(int64_t g) const {
  const Program& p = step.programs[program_of(g)];
  const Action& a = action(g);
  return action_name(a) + " on rank " + std::to_string(p.rank) + " (" +
         std::string(enum_name(a.stream, kStreamNames)) + ")";
}

std::vector<StreamWait> Engine::deadlock() const {
  constexpr size_t kMaxReported = 64;
  std::vector<StreamWait> waits;
  for (size_t sid = 0; sid < streams.size() && waits.size() < kMaxReported; ++sid) {
    const StreamState& s = streams[sid];
    if (s.pos >= s.actions.size()) continue;
    const size_t pi = sid / kNumStreams;
    const Program& p = step.programs[pi];
    const int64_t g = offset[pi] + s.actions[s.pos];
    const Action& a = p.actions[s.actions[s.pos]];
    StreamWait w{p.rank, a.stream, s.actions[s.pos], ""};
    if (s.parked_on >= 0) {
      w.waiting_for = describe(s.parked_on) + " (not done)";
    } else if (a.kind == ActionKind::recv) {
      w.waiting_for = "a send from rank " + std::to_string(a.peer) + " with tag " +
                      std::to_string(a.tag) + ", which no program has";
    } else if (match[g] >= 0) {
      const Instance& inst = instances[match[g]];
      std::string missing;
      for (int64_t m : inst.members)
        if (state[m] == kPending) {
          missing += ' ';
          missing += std::to_string(step.programs[program_of(m)].rank);
        }
      w.waiting_for =
          std::to_string(inst.arrived) + " of " + std::to_string(inst.needed) +
          " members of its group arrived" +
          (missing.empty() ? "; the others never issue it" : "; waiting for ranks" + missing);
    }
    waits.push_back(std::move(w));
  }
  return waits;
}

std::vector<CriticalAction> Engine::critical_path(
    std::array<double, kNumStreams>& by_stream) const {
  std::vector<CriticalAction> path;
  if (end.empty()) return path;
  int64_t g = std::max_element(end.begin(), end.end()) - end.begin();
  for (; g >= 0; g = binder[g]) {
    const size_t pi = program_of(g);
    const double on_path_s = end[g] - (binder[g] >= 0 ? end[binder[g]] : 0.0);
    by_stream[static_cast<size_t>(action(g).stream)] += on_path_s;
    path.push_back({pi, static_cast<uint32_t>(g - offset[pi]), on_path_s});
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// The compute each action gains from the communication of its rank that overlapped it in
// `timings` (per program, per action; 0 for all but compute actions): share × overlap, summed.
std::vector<std::vector<double>> interference_extras(
    const StepPrograms& step, const ActionPricer& pricer,
    const std::vector<std::vector<ActionTiming>>& timings) {
  std::vector<std::vector<double>> extra(step.programs.size());
  for (size_t i = 0; i < step.programs.size(); ++i) {
    const Program& p = step.programs[i];
    const std::vector<ActionTiming>& t = timings[i];
    extra[i].assign(p.actions.size(), 0.0);
    std::vector<uint32_t> compute;  // in program order, which is start order on one stream
    for (uint32_t j = 0; j < p.actions.size(); ++j)
      if (p.actions[j].stream == Stream::compute && p.actions[j].kind == ActionKind::compute)
        compute.push_back(j);
    for (uint32_t j = 0; j < p.actions.size(); ++j) {
      const double share = pricer.interference_share(p, p.actions[j]);
      if (share == 0) continue;
      const ActionTiming c = t[j];
      // The first compute action still running when the communication starts.
      auto k = std::partition_point(compute.begin(), compute.end(),
                                    [&](uint32_t a) { return t[a].end_s <= c.start_s; });
      for (; k != compute.end() && t[*k].start_s < c.end_s; ++k)
        extra[i][*k] +=
            share * (std::min(c.end_s, t[*k].end_s) - std::max(c.start_s, t[*k].start_s));
    }
  }
  return extra;
}

// `base`'s prices with each compute action lengthened by its interference.
class SlowedPricer : public ActionPricer {
 public:
  SlowedPricer(const ActionPricer& base, const StepPrograms& step,
               std::vector<std::vector<double>> extra)
      : base_(base), step_(step), extra_(std::move(extra)) {}
  double duration_s(const Program& p, const Action& a) const override {
    const auto i = static_cast<size_t>(&p - step_.programs.data());
    return base_.duration_s(p, a) + extra_[i][static_cast<size_t>(&a - p.actions.data())];
  }
  double interference_share(const Program& p, const Action& a) const override {
    return base_.interference_share(p, a);
  }
  int64_t activation_bytes(const Program& p, int chunk) const override {
    return base_.activation_bytes(p, chunk);
  }
  int64_t weight_grad_bytes(const Program& p, int chunk) const override {
    return base_.weight_grad_bytes(p, chunk);
  }

 private:
  const ActionPricer& base_;
  const StepPrograms& step_;
  std::vector<std::vector<double>> extra_;
};

SimResult simulate_once(const StepPrograms& step, const ActionPricer& pricer,
                        StreamExecution streams) {
  SimResult r;
  r.world = step.world;
  r.ranks_per_program = step.ranks_per_program;
  if (step.symmetric())
    r.symmetry = "simulated " + std::to_string(step.programs.size()) + " programs for " +
                 std::to_string(step.world) + " ranks, one per pipeline stage: each stands for " +
                 std::to_string(step.ranks_per_program) +
                 " ranks (its tensor-, context-, expert- and data-parallel peers), which run the "
                 "same program on equal shards";
  Engine e(step, pricer, streams);
  e.setup();
  e.run();
  r.errors = e.errors;
  r.deadlock = e.deadlock();
  r.events = static_cast<int64_t>(e.end.size());
  for (size_t i = 0; i < step.programs.size(); ++i) {
    std::vector<ActionTiming> t(step.programs[i].actions.size());
    std::vector<double> wait(t.size(), 0.0);
    for (size_t j = 0; j < t.size(); ++j) {
      const int64_t g = e.offset[i] + static_cast<int64_t>(j);
      t[j] = {e.start[g], e.end[g]};
      const Action& a = step.programs[i].actions[j];
      const bool finished = e.state[g] == kDone;  // not in a deadlock
      if ((is_group_action(a) || a.kind == ActionKind::recv) && e.match[g] >= 0 && finished)
        wait[j] = e.start[g] - e.arrival_s[g];
      r.step_time_s = std::max(r.step_time_s, e.end[g]);
    }
    r.timings.push_back(std::move(t));
    r.wait_s.push_back(std::move(wait));
  }
  if (!r.ok()) return r;
  r.critical_path = e.critical_path(r.critical_path_s);
  for (size_t i = 0; i < step.programs.size(); ++i) {
    const Program& p = step.programs[i];
    r.ranks.push_back(rank_stats(
        p, r.timings[i], r.step_time_s,
        [&](int chunk) { return pricer.activation_bytes(p, chunk); },
        [&](int chunk) { return pricer.weight_grad_bytes(p, chunk); }));
  }
  return r;
}

}  // namespace

SimResult simulate(const StepPrograms& step, const ActionPricer& pricer, StreamExecution streams) {
  SimResult first = simulate_once(step, pricer, streams);
  first.interference_s.assign(step.programs.size(), 0.0);
  // One thread running every action in turn overlaps nothing.
  if (!first.ok() || streams == StreamExecution::program_order) return first;
  std::vector<std::vector<double>> extra = interference_extras(step, pricer, first.timings);
  std::vector<double> per_program;
  for (const auto& e : extra) per_program.push_back(std::accumulate(e.begin(), e.end(), 0.0));
  if (std::ranges::all_of(per_program, [](double s) { return s == 0; })) return first;
  SimResult second = simulate_once(step, SlowedPricer(pricer, step, std::move(extra)), streams);
  second.interference_s = std::move(per_program);
  return second;
}

}  // namespace shardplan
