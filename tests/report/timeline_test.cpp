// report/timeline.h: a trace's lanes, exact where they are small, drawn at the page's resolution
// where they hold more actions than their share of bars, and predicted and measured processes
// each starting at 0 s.
#include <catch2/catch.hpp>

#include "report/timeline.h"

using namespace shardplan;

namespace {

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json action(const std::string& name, int pid, int tid, double ts_us, double dur_us) {
  return {{"name", name}, {"ph", "X"}, {"pid", pid}, {"tid", tid}, {"ts", ts_us}, {"dur", dur_us}};
}

}  // namespace

TEST_CASE("a small lane keeps every action and its compute stream's gaps are idle") {
  nlohmann::json events = {metadata("process_name", 0, 0, "rank 0 (stands for 8 identical ranks)"),
                           metadata("thread_name", 0, 0, "compute"),
                           metadata("thread_name", 0, 4, "dp-comm"),
                           action("forward mb 0", 0, 0, 100, 10),
                           action("backward mb 0", 0, 0, 130, 20),
                           action("grad_reduce dp", 0, 4, 140, 30)};
  const nlohmann::json t = report::timeline_from_trace({{"traceEvents", events}}, "sim", 1000);
  REQUIRE(t["groups"].size() == 1);
  CHECK(t["groups"][0]["label"] == "sim");
  CHECK(t["groups"][0]["span_s"].get<double>() == Approx(70e-6));
  REQUIRE(t["lanes"].size() == 2);
  CHECK(t["lanes"][0]["label"] == "rank 0 \u00d78 compute");
  CHECK(t["kinds"] == nlohmann::json({"forward", "backward", "dp-comm", "idle"}));
  // forward 0-10 us, idle 10-30 us, backward 30-50 us (times from the group's first action).
  CHECK(t["lanes"][0]["bars"] == nlohmann::json({{0.0, 1e-5, 0}, {1e-5, 3e-5, 3}, {3e-5, 5e-5, 1}}));
  CHECK(t["lanes"][1]["bars"] == nlohmann::json({{4e-5, 7e-5, 2}}));
}

TEST_CASE("a lane of more actions than its bars is drawn in slices of one kind each") {
  nlohmann::json events = {metadata("thread_name", 0, 0, "compute")};
  // 10,000 alternating forward and backward actions of 1 us with 1 us gaps, then 10 ms of forward.
  for (int i = 0; i < 10'000; ++i)
    events.push_back(action(i % 2 ? "backward" : "forward", 0, 0, 2.0 * i, 1));
  events.push_back(action("forward", 0, 0, 20'000, 10'000));
  const nlohmann::json t = report::timeline_from_trace({{"traceEvents", events}}, "", 100);
  const nlohmann::json& bars = t["lanes"][0]["bars"];
  // 100 slices of 300 us: in each of the first 66 both kinds are busy a quarter of it, neither
  // half: idle; from the 67th, which ends with 200 us of the long forward, forward.
  REQUIRE(bars.size() == 2);
  CHECK(t["kinds"][bars[0][2].get<size_t>()] == "idle");
  CHECK(bars[0][1].get<double>() == Approx(0.0198));
  CHECK(t["kinds"][bars[1][2].get<size_t>()] == "forward");
  CHECK(bars[1][1].get<double>() == Approx(0.03));
}

TEST_CASE("predicted and measured processes are two groups each from 0 s in the trace's order") {
  nlohmann::json events = {metadata("process_name", 0, 0, "predicted rank 0"),
                           metadata("process_name", 2, 0, "measured rank 0"),
                           action("forward", 0, 0, 0, 10), action("forward", 2, 0, 5000, 12)};
  const nlohmann::json t = report::timeline_from_trace({{"traceEvents", events}}, "x", 1000);
  REQUIRE(t["groups"].size() == 2);
  CHECK(t["groups"][0]["label"] == "predicted");
  CHECK(t["groups"][1]["label"] == "measured");
  // Without thread names, the stream is simulator/trace.h's tid.
  CHECK(t["lanes"][1]["label"] == "rank 0 compute");
  CHECK(t["lanes"][1]["bars"][0] == nlohmann::json({0.0, 1.2e-5, 0}));
}

TEST_CASE("a rank's activations line: its counter's points from the group's start, and the peak "
          "kept where there are more points than the line draws") {
  const auto held = [](double ts_us, double gib) {
    return nlohmann::json{{"name", "activations held"}, {"ph", "C"}, {"pid", 0},
                          {"ts", ts_us}, {"args", {{"GiB", gib}, {"micro-batch chunks", 1}}}};
  };
  nlohmann::json events = {action("forward", 0, 0, 100, 10), action("backward", 0, 0, 110, 10),
                           held(100, 2.0), held(120, 0.0)};
  const nlohmann::json t = report::timeline_from_trace({{"traceEvents", events}}, "sim", 1000);
  REQUIRE(t["activations"].size() == 1);
  const nlohmann::json& two = t["activations"][0]["points"];
  REQUIRE(two.size() == 2);
  CHECK(two[0] == nlohmann::json({0.0, 2.0}));
  CHECK(two[1][0].get<double>() == Approx(2e-5));
  CHECK(two[1][1].get<double>() == 0.0);

  // 4,000 changes over 4 ms, one of them the peak: at most kMaxCounterPoints, the peak among them.
  nlohmann::json many = {action("forward", 0, 0, 0, 4000)};
  for (int i = 0; i < 4000; ++i) many.push_back(held(i, i == 2345 ? 9.0 : (i % 2) * 1.0));
  const nlohmann::json points =
      report::timeline_from_trace({{"traceEvents", many}}, "sim", 1000)["activations"][0]["points"];
  CHECK(points.size() <= report::kMaxCounterPoints);
  double peak = 0;
  for (const auto& p : points) peak = std::max(peak, p[1].get<double>());
  CHECK(peak == 9.0);
}
