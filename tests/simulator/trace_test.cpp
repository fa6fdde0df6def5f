// The Chrome trace: every action of every program once, as a complete event on its rank and
// stream, with the names and arguments docs/conventions.md fixes.
#include "simulator/trace.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <tuple>

#include "simulator/event_simulator.h"
#include "simulator/uniform_pricer.h"
#include "tests/core/schedule_fixtures.h"

namespace shardplan {

TEST_CASE("every action of every program appears once, with end ≥ start", "[trace]") {
  UniformPricer pricer;
  pricer.comm_s = 0.5;
  Layout l = test::layout(2, 2, 2, 4, Schedule::interleaved, 2);
  l.zero = 3;
  l.sequence_parallel = true;
  const StepPrograms step = build_step(test::small_gpt(), test::small_training(), l, false);
  const SimResult r = simulate(step, pricer);
  REQUIRE(r.ok());
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(step.programs, r.timings).dump());

  std::map<int64_t, size_t> per_rank;
  std::set<std::tuple<int64_t, int, std::string>> threads;
  std::multiset<std::tuple<int64_t, std::string, double>> seen;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") {
      if (e.at("name") == "thread_name")
        threads.insert({e.at("pid").get<int64_t>(), e.at("tid").get<int>(),
                        e.at("args").at("name").get<std::string>()});
      continue;
    }
    REQUIRE(e.at("ph") == "X");
    CHECK(e.at("dur").get<double>() >= 0);
    ++per_rank[e.at("pid").get<int64_t>()];
    seen.insert(
        {e.at("pid").get<int64_t>(), e.at("name").get<std::string>(), e.at("ts").get<double>()});
  }
  int64_t actions = 0;
  for (size_t i = 0; i < step.programs.size(); ++i) {
    const Program& p = step.programs[i];
    CHECK(per_rank[p.rank] == p.actions.size());
    actions += static_cast<int64_t>(p.actions.size());
    for (size_t j = 0; j < p.actions.size(); ++j)
      CHECK(seen.count({p.rank, action_name(p.actions[j]), r.timings[i][j].start_s * 1e6}) >= 1);
    CHECK(threads.count({p.rank, 0, "compute"}) == 1);
    CHECK(threads.count({p.rank, 6, "pp-comm"}) == 1);
  }
  CHECK(actions == r.events);
}

TEST_CASE("trace events carry rank, stream, micro-batch, chunk and bytes", "[trace]") {
  Program p;
  p.rank = 5;
  Action send;
  send.kind = ActionKind::send;
  send.stream = Stream::pp_comm;
  send.pass = Pass::forward;
  send.micro_batch = 3;
  send.chunk = 1;
  send.peer = 6;
  send.tag = 42;
  send.bytes = 4096;
  p.actions.push_back(send);
  const nlohmann::json trace = chrome_trace({p}, {{ActionTiming{0.5, 0.75}}}, 8);
  const auto& events = trace.at("traceEvents");
  const auto process = nlohmann::json::parse(R"json({"name": "process_name", "ph": "M", "pid": 5,
      "tid": 0, "args": {"name": "rank 5 (stands for 8 identical ranks)"}})json");
  const auto action = nlohmann::json::parse(R"json({"name": "send activation mb3 c1", "cat": "send",
      "ph": "X", "ts": 500000.0, "dur": 250000.0, "pid": 5, "tid": 6, "args": {"micro_batch": 3,
      "chunk": 1, "pass": "forward", "peer": 6, "tag": 42, "bytes": 4096}})json");
  CHECK(events[0] == process);
  CHECK(events.back() == action);
}

}  // namespace shardplan
