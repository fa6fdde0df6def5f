#include "simulator/simulation_report.h"

#include <fmt/format.h>

#include "core/human_format.h"
#include "simulator/estimate_report.h"

namespace shardplan {

namespace {

using nlohmann::json;

constexpr size_t kCriticalPathRows = 8;     // action names listed in the table
constexpr size_t kCriticalPathVisits = 16;  // rank visits listed in the table

double as_double(int64_t v) {
  return static_cast<double>(v);
}

json memory_to_json(const SimulatedMemory& m) {
  return json{{"rank", m.rank},
              {"stage", m.stage},
              {"parameters_bytes", m.state.parameters},
              {"gradients_bytes", m.state.gradients},
              {"optimizer_bytes", m.state.optimizer()},
              {"fp8_weights_bytes", m.state.fp8_weights},
              {"activations_bytes", m.activations_bytes()},
              {"other_bytes", m.other_bytes},
              {"peak_bytes", m.peak_bytes()},
              {"allocator_cache_bytes", m.allocator_cache_bytes},
              {"reserved_bytes", m.reserved_bytes()},
              {"chunk_activations_bytes", m.chunk_activations_bytes},
              {"recompute_working_bytes", m.recompute_working_bytes},
              {"peak_activation_chunks", m.peak_activation_chunks},
              {"peak_activation_s", m.peak_activation_s},
              {"peak_micro_batch", m.peak_micro_batch},
              {"peak_chunk", m.peak_chunk},
              {"runtime_reserved_bytes", m.runtime_reserved_bytes},
              {"capacity_bytes", m.capacity_bytes},
              {"fits", m.fits()}};
}

json streams_to_json(const std::array<double, kNumStreams>& s) {
  json j = json::object();
  for (const auto& [stream, name] : kStreamNames)
    j[std::string(name)] = s[static_cast<size_t>(stream)];
  return j;
}

json rank_to_json(const PlanSimulation& s, size_t i) {
  const RankStats& r = s.result.ranks[i];
  return json{{"rank", r.rank},
              {"stage", s.memory[i].stage},
              {"stands_for", s.result.ranks_per_program},
              {"busy_s", r.busy_s},
              {"idle_s", r.idle_s},
              {"exposed_comm_s", r.exposed_comm_s},
              {"bubble_s", r.bubble_s},
              {"stream_busy_s", streams_to_json(r.stream_busy_s)},
              {"memory", memory_to_json(s.memory[i])}};
}

json critical_path_to_json(const PlanSimulation& s) {
  const CriticalPathSummary c = summarize_critical_path(s.step, s.result);
  json by_name = json::array();
  for (const CriticalPathEntry& e : c.by_name)
    by_name.push_back({{"name", e.name},
                       {"stream", enum_name(e.stream, kStreamNames)},
                       {"actions", e.actions},
                       {"on_path_s", e.on_path_s}});
  return json{{"actions", c.actions},
              {"by_stream_s", streams_to_json(s.result.critical_path_s)},
              {"by_name", by_name},
              {"ranks", c.ranks}};
}

}  // namespace

json simulation_to_json(const PlanSimulation& s) {
  const SimResult& r = s.result;
  json j{{"step_time_s", s.step_time_s},
         {"tokens_per_s", s.tokens_per_s},
         {"tflops_per_device", s.tflops_per_device},
         {"mfu", s.mfu},
         {"hfu", s.hfu},
         {"bubble_fraction", s.bubble_fraction},
         {"exposed_comm_s", s.exposed_comm_s},
         {"interference_s", s.interference_s},
         {"memory", memory_to_json(s.memory[s.worst_memory])},
         {"fits", s.fits},
         {"world", r.world},
         {"ranks_per_program", r.ranks_per_program},
         {"symmetry", r.symmetry},
         {"events", r.events},
         {"build_s", s.build_s},
         {"simulate_s", s.simulate_s}};
  j["ranks"] = json::array();
  for (size_t i = 0; i < r.ranks.size(); ++i) j["ranks"].push_back(rank_to_json(s, i));
  j["critical_path"] = critical_path_to_json(s);
  j["estimate"] = estimate_to_json(s.estimate);
  return j;
}

namespace {

void append_step(std::string& out, const PlanSimulation& s, bool wide) {
  const Estimate& e = s.estimate;
  const SimResult& r = s.result;
  out += r.symmetry.empty() ? fmt::format("Simulated every one of the {} ranks.\n", r.world)
                            : paragraph(fmt::format("Symmetry: {}.", r.symmetry), wide);
  // Narrow: the build time on a line of its own, so that no line's length hangs on a time.
  out += fmt::format(
      "  {} actions simulated in {} ({:.1f} M events/s){}programs and prices built in {}\n",
      r.events, format_seconds(s.simulate_s),
      as_double(r.events) / std::max(s.simulate_s, 1e-9) / 1e6, wide ? "; " : "\n  ",
      format_seconds(s.build_s));
  out += fmt::format("\nStep ({} devices, {} tokens)  {:>14} {:>14}\n", e.world, e.tokens_per_step,
                     "simulated", "estimate");
  const auto row = [&](const char* label, const std::string& sim, const std::string& est,
                       const std::string& note = "") {
    const std::string cells = fmt::format("  {:22} {:>14} {:>14}", label, sim, est);
    out += note.empty() ? cells + "\n"
           : wide       ? fmt::format("{}   {}\n", cells, note)
                        : row_with_wrapped_last(cells + "   ", note, kTableColumns, ' ');
  };
  row("step time", format_seconds(s.step_time_s), format_seconds(e.step_time_s),
      fmt::format("{:+.1f}%", (s.step_time_s / e.step_time_s - 1) * 100));
  row("tokens/s", fmt::format("{:.1f}", s.tokens_per_s), fmt::format("{:.1f}", e.tokens_per_s));
  row("TFLOP/s per device", fmt::format("{:.4g}", s.tflops_per_device),
      fmt::format("{:.4g}", e.tflops_per_device), "model FLOPs (Narayanan et al. 2021 eq. 3)");
  row("MFU", format_percent(s.mfu), format_percent(e.mfu),
      fmt::format("of {:.4g} TFLOP/s dense {}peak per device", e.peak_flops_per_device / 1e12,
                  e.fp8 == Fp8Recipe::none ? "" : "FP8 "));
  row("HFU", format_percent(s.hfu), format_percent(e.hfu), "with recompute");
  row("bubble", format_percent(s.bubble_fraction), format_percent(e.bubble_fraction),
      fmt::format("simulated: rank {} idle waiting on others", r.ranks[s.busiest].rank));
  row("exposed comm", format_seconds(s.exposed_comm_s), format_seconds(e.exposed_comm_s),
      fmt::format("simulated: rank {} idle while communicating", r.ranks[s.busiest].rank));
  row("interference", format_seconds(s.interference_s), format_seconds(e.time.interference_s),
      "compute slowed by the communication it hides (NCCL's SMs)");
  row("reserved memory", format_gib(as_double(s.memory[s.worst_memory].reserved_bytes())),
      format_gib(as_double(e.memory().reserved_bytes())),
      "worst rank: peak and the caching allocator's cache");
  row("fits", s.fits ? "yes" : "no", e.fits ? "yes" : "no");
}

// Consecutive ranks whose rows read the same share one row ("16-31").
void append_ranks(std::string& out, const PlanSimulation& s, bool wide) {
  const SimResult& r = s.result;
  out += r.ranks_per_program > 1
             ? fmt::format("\nRanks (one per pipeline stage, each standing for {} ranks)\n",
                           r.ranks_per_program)
             : std::string("\nRanks (consecutive ranks with the same figures on one row)\n");
  // Narrow: times and sizes in the widths they print in (9 and 11), to fit kTableColumns.
  const auto cells = [&](std::string_view stage, std::string_view busy, std::string_view idle,
                         std::string_view exposed, std::string_view bubble, std::string_view chunks,
                         std::string_view activations, std::string_view peak) {
    return wide ? fmt::format("{:>5} {:>11} {:>11} {:>12} {:>11} {:>6} {:>12} {:>12}", stage, busy,
                              idle, exposed, bubble, chunks, activations, peak)
                : fmt::format("{:>5} {:>10} {:>10} {:>12} {:>10} {:>6} {:>11} {:>11}", stage, busy,
                              idle, exposed, bubble, chunks, activations, peak);
  };
  out += fmt::format("  {:>11} {}\n", "rank",
                     cells("stage", "busy", "idle", "exposed comm", "bubble", "chunks",
                           "activations", "peak memory"));
  const auto figures = [&](size_t i) {
    const RankStats& k = r.ranks[i];
    const SimulatedMemory& m = s.memory[i];
    return cells(std::to_string(m.stage), format_seconds(k.busy_s), format_seconds(k.idle_s),
                 format_seconds(k.exposed_comm_s), format_seconds(k.bubble_s),
                 std::to_string(m.peak_activation_chunks),
                 format_gib(as_double(m.activations_bytes())),
                 format_gib(as_double(m.peak_bytes())));
  };
  for (size_t i = 0; i < r.ranks.size();) {
    const std::string row = figures(i);
    size_t j = i + 1;
    while (j < r.ranks.size() && r.ranks[j].rank == r.ranks[j - 1].rank + 1 && figures(j) == row)
      ++j;
    const std::string ranks = j == i + 1
                                  ? fmt::format("{}", r.ranks[i].rank)
                                  : fmt::format("{}-{}", r.ranks[i].rank, r.ranks[j - 1].rank);
    out += fmt::format("  {:>11} {}\n", ranks, row);
    i = j;
  }
  out +=
      "  busy: compute stream running; exposed comm: compute idle while the rank communicates;\n"
      "  bubble: idle otherwise (waiting on other ranks); chunks: micro-batch chunk activations\n"
      "  alive at the peak\n";
}

void append_critical_path(std::string& out, const PlanSimulation& s, bool wide) {
  const CriticalPathSummary c = summarize_critical_path(s.step, s.result);
  out +=
      fmt::format("\nCritical path ({} actions, {})\n", c.actions, format_seconds(s.step_time_s));
  std::string streams;
  for (const auto& [stream, name] : kStreamNames) {
    const double t = s.result.critical_path_s[static_cast<size_t>(stream)];
    if (t <= 0) continue;
    streams += fmt::format("{}{} {} ({})", streams.empty() ? "" : ", ", name, format_seconds(t),
                           format_percent(t / s.step_time_s));
  }
  out += wide ? fmt::format("  by stream: {}\n", streams)
              : row_with_wrapped_last("  by stream: ", streams);
  std::string visits;
  for (size_t i = 0; i < c.ranks.size() && i < kCriticalPathVisits; ++i)
    visits += fmt::format("{}{}", i == 0 ? "" : " > ", c.ranks[i]);
  if (c.ranks.size() > kCriticalPathVisits)
    visits += fmt::format(" > ... ({} visits)", c.ranks.size());
  out += wide ? fmt::format("  through ranks: {}\n", visits)
              : row_with_wrapped_last("  through ranks: ", visits, kTableColumns, '>');
  out += fmt::format("  {:32} {:>10} {:>11} {:>7} {:>8}\n", "action", "stream", "on path", "share",
                     "actions");
  for (size_t i = 0; i < c.by_name.size() && i < kCriticalPathRows; ++i) {
    const CriticalPathEntry& e = c.by_name[i];
    out += fmt::format("  {:32} {:>10} {:>11} {:>7} {:>8}\n", e.name,
                       enum_name(e.stream, kStreamNames), format_seconds(e.on_path_s),
                       format_percent(e.on_path_s / s.step_time_s), e.actions);
  }
  if (c.by_name.size() > kCriticalPathRows)
    out += fmt::format("  ({} more kinds of action)\n", c.by_name.size() - kCriticalPathRows);
}

void append_memory(std::string& out, const PlanSimulation& s, bool wide) {
  const SimulatedMemory& m = s.memory[s.worst_memory];
  out += fmt::format(
      "\nMemory of the worst rank (rank {}, stage {}, {} micro-batch chunks alive at the peak)\n",
      m.rank, m.stage, m.peak_activation_chunks);
  if (m.peak_micro_batch >= 0)
    out += fmt::format(
        "  activations peak at {} into the step, as the forward of micro-batch {} (chunk {}) "
        "begins\n",
        format_seconds(m.peak_activation_s), m.peak_micro_batch, m.peak_chunk);
  const auto line = [&](std::string_view name, int64_t bytes, std::string_view note = "") {
    out += memory_row(name, bytes, note, wide);
  };
  line("parameters", m.state.parameters, "memory model");
  line("gradients", m.state.gradients, "memory model");
  line("optimizer", m.state.optimizer(), "memory model: master weights and moments");
  if (m.state.fp8_weights > 0)
    line("fp8_weights", m.state.fp8_weights, "memory model: Transformer Engine's FP8 copies");
  line("activations", m.chunk_activations_bytes, "simulated peak of the chunks alive");
  line("recompute_working", m.recompute_working_bytes, "memory model");
  line("other", m.other_bytes, "memory model: estimate lists each");
  line("peak", m.peak_bytes(), "allocated: the tensors alive at once");
  line("allocator_cache", m.allocator_cache_bytes, "memory model: the allocator's replay");
  line("reserved", m.reserved_bytes(), "what the caching allocator holds");
  line("runtime_reserved", m.runtime_reserved_bytes);
  line("capacity", m.capacity_bytes);
  const int64_t free_bytes = m.capacity_bytes - m.runtime_reserved_bytes - m.reserved_bytes();
  out += free_bytes >= 0
             ? fmt::format("  fits: {} free\n", format_gib(as_double(free_bytes)))
             : fmt::format("  does not fit: {} short\n", format_gib(as_double(-free_bytes)));
}

}  // namespace

std::string format_simulation_table(const PlanSimulation& s, bool wide) {
  std::string out;
  append_step(out, s, wide);
  append_ranks(out, s, wide);
  append_critical_path(out, s, wide);
  append_memory(out, s, wide);
  return out;
}

}  // namespace shardplan
