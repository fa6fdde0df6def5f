#include "simulator/estimate_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/human_format.h"
#include "simulator/model_flops.h"

namespace shardplan {

namespace {

using nlohmann::json;

json memory_to_json(const RankMemory& r) {
  json items = json::object();
  for (const MemoryItem& item : memory_items(r))
    items[std::string(item.name) + "_bytes"] = item.bytes;
  return json{{"stage", r.stage},
              {"parameters_bytes", r.state.parameters},
              {"gradients_bytes", r.state.gradients},
              {"optimizer_bytes", r.state.optimizer()},
              {"activations_bytes", r.activations_bytes()},
              {"other_bytes", r.other_bytes()},
              {"peak_bytes", r.peak_bytes()},
              {"reserved_bytes", r.reserved_bytes()},
              {"runtime_reserved_bytes", r.runtime_reserved_bytes},
              {"capacity_bytes", r.capacity_bytes},
              {"inflight_microbatches", r.inflight_microbatches},
              {"fits", r.fits()},
              {"items", items}};
}

json pass_to_json(const PassCost& p) {
  json j = json::object();
  for (const auto& [kind, name] : kOpKindNames) {
    const KindCost& k = p[kind];
    j[std::string(name)] = {{"flops", k.flops}, {"bytes", k.bytes}, {"time_s", k.time_s}};
  }
  j["time_s"] = p.time_s();
  return j;
}

json collective_to_json(const CollectiveEstimate& c) {
  return json{{"name", c.name()},
              {"collective", enum_name(c.action.op, kCollectiveNames)},
              {"group", enum_name(c.action.group, kGroupNames)},
              {"group_size", c.span.size},
              {"nodes", c.span.nodes},
              {"level", c.span.level},
              {"level_name", c.level_name},
              {"algorithm", enum_name(c.cost.algorithm, kAlgorithmNames)},
              {"bytes", c.action.bytes},
              {"frequency", enum_name(c.frequency, kCommFrequencyNames)},
              {"calls_per_step", c.calls_per_step},
              {"overlaps", enum_name(c.window, kCommWindowNames)},
              {"time_s", c.cost.time_s},
              {"local_s", c.local_s},
              {"algbw_GBps", c.cost.algbw_GBps},
              {"busbw_GBps", c.cost.busbw_GBps},
              {"total_s", c.total_s},
              {"exposed_s", c.exposed_s},
              {"volume_bytes", c.volume_bytes},
              {"from_profile", c.cost.from_profile}};
}

size_t collectives_from_profile(const Estimate& e) {
  return static_cast<size_t>(std::count_if(e.collectives.begin(), e.collectives.end(),
                                           [](const auto& c) { return c.cost.from_profile; }));
}

// Which figures came from the calibration profile and which from the datasheets; null without one.
json profile_to_json(const Estimate& e) {
  const Profile* p = e.options.profile;
  if (!p) return nullptr;
  return json{{"device", p->device},
              {"backend", enum_name(p->backend, kBackendNames)},
              {"matmul", "profile"},
              {"memory_bound", "profile"},
              {"optimizer", "profile"},
              {"attention", "datasheet"},
              {"collectives_from_profile", collectives_from_profile(e)},
              {"collectives_from_model", e.collectives.size() - collectives_from_profile(e)}};
}

}  // namespace

json estimate_to_json(const Estimate& e) {
  json j{{"step_time_s", e.step_time_s},
         {"tokens_per_s", e.tokens_per_s},
         {"tflops_per_device", e.tflops_per_device},
         {"mfu", e.mfu},
         {"best_published_mfu", e.best_published_mfu},
         {"mfu_above_published", e.mfu_above_published()},
         {"hfu", e.hfu},
         {"bubble_fraction", e.bubble_fraction},
         {"exposed_comm_s", e.exposed_comm_s},
         {"fits", e.fits},
         {"world", e.world},
         {"tokens_per_step", e.tokens_per_step},
         {"model_flops_per_step", e.model_flops_per_step},
         {"hardware_flops_per_step", e.hardware_flops_per_step},
         {"peak_flops_per_device", e.peak_flops_per_device},
         {"fp8", enum_name(e.fp8, kFp8RecipeNames)},
         {"options",
          {{"framework", e.options.framework},
           {"attention", enum_name(e.options.attention, kAttentionKernelNames)},
           {"dropout", e.options.dropout},
           {"host_us_per_kernel", e.options.host_s_per_kernel * 1e6}}},
         {"profile", profile_to_json(e)}};
  j["time"] = {{"compute_s", e.time.compute_s},
               {"recompute_s", e.time.recompute_s},
               {"microbatch_comm_s", e.time.microbatch_comm_s},
               {"bubble_s", e.time.bubble_s},
               {"step_comm_s", e.time.step_comm_s},
               {"interference_s", e.time.interference_s},
               {"optimizer_s", e.time.optimizer_s}};
  j["memory"] = memory_to_json(e.memory());
  j["memory"]["rank"] = e.worst_rank;
  if (e.overflow)
    j["memory"]["overflow"] = {{"item", e.overflow->item},
                               {"needed_bytes", e.overflow->needed_bytes},
                               {"free_bytes", e.overflow->free_bytes}};
  j["stages"] = json::array();
  for (size_t i = 0; i < e.stages.size(); ++i) {
    json s = memory_to_json(e.stages[i]);
    s["microbatch_s"] = e.stage_microbatch_s[i];
    j["stages"].push_back(std::move(s));
  }
  j["compute"] = {{"stage", e.slowest_stage},
                  {"forward", pass_to_json(e.compute.forward)},
                  {"backward", pass_to_json(e.compute.backward)},
                  {"weight_grad", pass_to_json(e.compute.weight_grad)},
                  {"recompute", pass_to_json(e.compute.recompute)},
                  {"optimizer_bytes", e.optimizer_bytes}};
  j["collectives"] = json::array();
  for (const CollectiveEstimate& c : e.collectives)
    j["collectives"].push_back(collective_to_json(c));
  j["train"] = {{"time_s", e.train_time_s}, {"cost", e.train_cost}};
  return j;
}

namespace {

std::string caution_sentence(const Estimate& e) {
  return fmt::format(
      "caution: {} MFU is above the best published on this GPU ({}): the model is optimistic "
      "here (unmodelled: memory-bandwidth contention beside communication, the framework's own "
      "work)",
      format_percent(e.mfu), format_percent(e.best_published_mfu));
}

}  // namespace

std::string mfu_caution(const Estimate& e) {
  return fmt::format("  {}\n", caution_sentence(e));
}

std::string memory_row(std::string_view name, int64_t bytes, std::string_view note, bool wide) {
  const std::string cells =
      fmt::format("  {:26} {:>16} B {:>12}", name, bytes, format_gib(static_cast<double>(bytes)));
  if (note.empty()) return cells + "\n";
  return wide ? fmt::format("{}  {}\n", cells, note)
              : row_with_wrapped_last(cells + "  ", note, kTableColumns, ' ');
}

namespace {

double as_double(int64_t v) {
  return static_cast<double>(v);
}

// One line of the step breakdown: label, time, and what it is.
std::string step_line(const char* label, double s, const std::string& note = "") {
  const std::string line = fmt::format("    {:20} {:>12}   {}", label, format_seconds(s), note);
  return line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
}

void append_step(std::string& out, const Estimate& e, bool wide) {
  const StepTime& t = e.time;
  out += fmt::format("Step ({} devices, {} tokens)\n", e.world, e.tokens_per_step);
  out += fmt::format("  {:22} {:>12}\n", "step time", format_seconds(e.step_time_s));
  out += step_line("compute", t.compute_s,
                   fmt::format("forward + backward, slowest stage ({})", e.slowest_stage));
  out += step_line("recompute", t.recompute_s);
  out += step_line("exposed comm", t.microbatch_comm_s, "per micro-batch: tp, cp, ep, pp, ZeRO-3");
  out += step_line("pipeline bubble", t.bubble_s,
                   format_percent(e.bubble_fraction) + " of the pipeline time");
  out += step_line("exposed comm", t.step_comm_s, "per step: data parallel, embedding");
  out += step_line("interference", t.interference_s,
                   "compute slowed by the communication it hides (NCCL's SMs)");
  out += step_line("optimizer", t.optimizer_s);
  out += fmt::format("  {:22} {:>12.1f}\n", "tokens/s", e.tokens_per_s);
  out += fmt::format("  {:22} {:>12.4e}   Narayanan et al. 2021 eq. 3, no recompute\n",
                     "model FLOPs/step", e.model_flops_per_step);
  out += fmt::format("  {:22} {:>12.4e}   with recompute\n", "hardware FLOPs/step",
                     e.hardware_flops_per_step);
  out += fmt::format("  {:22} {:>12.4g}   model FLOPs / step time / {} devices / 1e12\n",
                     "TFLOP/s per device", e.tflops_per_device, e.world);
  out += fmt::format("  {:22} {:>12}   of {:.4g} TFLOP/s dense {}peak per device\n", "MFU",
                     format_percent(e.mfu), e.peak_flops_per_device / 1e12,
                     e.fp8 == Fp8Recipe::none ? "" : "FP8 ");
  out += fmt::format("  {:22} {:>12}\n", "HFU", format_percent(e.hfu));
  if (e.mfu_above_published()) out += paragraph(caution_sentence(e), wide, 4, 2);
}

void append_memory(std::string& out, const Estimate& e, bool wide) {
  const RankMemory& r = e.memory();
  out += fmt::format("\nMemory of the worst rank (rank {}, stage {}, {} micro-batches in flight)\n",
                     e.worst_rank, r.stage, r.inflight_microbatches);
  for (const MemoryItem& item : memory_items(r)) out += memory_row(item.name, item.bytes);
  out += memory_row("peak", r.peak_bytes(),
                    "allocated: the items after the runtime's three, but the cache", wide);
  out += memory_row("reserved", r.reserved_bytes(),
                    "what the caching allocator holds: peak and cache", wide);
  out += memory_row("capacity", r.capacity_bytes);
  if (e.overflow)
    out += fmt::format("  does not fit: {} needs {}, {} free\n", e.overflow->item,
                       format_gib(as_double(e.overflow->needed_bytes)),
                       format_gib(as_double(e.overflow->free_bytes)));
  else
    out += fmt::format(
        "  fits: {} free\n",
        format_gib(as_double(r.capacity_bytes - r.runtime_reserved_bytes - r.reserved_bytes())));
}

void append_compute(std::string& out, const Estimate& e, bool wide) {
  const ExecutionOptions& x = e.options;
  out += '\n';
  out += paragraph(
      fmt::format("Compute of one micro-batch on stage {}, as {} runs it "
                  "(attention {}, dropout {}, host {:g} us per kernel)",
                  e.slowest_stage, x.framework, enum_name(x.attention, kAttentionKernelNames),
                  x.dropout ? "on" : "off", x.host_s_per_kernel * 1e6),
      wide);
  out +=
      fmt::format("  {:10} {:14} {:>12} {:>12} {:>12}\n", "pass", "kind", "FLOPs", "bytes", "time");
  const std::pair<const char*, const PassCost*> passes[] = {{"forward", &e.compute.forward},
                                                            {"backward", &e.compute.backward},
                                                            {"weight_grad", &e.compute.weight_grad},
                                                            {"recompute", &e.compute.recompute}};
  for (const auto& [pass, cost] : passes)
    for (const auto& [kind, name] : kOpKindNames) {
      // Only a split backward has weight-gradient actions of its own.
      if (cost == &e.compute.weight_grad && cost->time_s() == 0) break;
      const KindCost& k = (*cost)[kind];
      out += fmt::format("  {:10} {:14} {:>12.4e} {:>12.4e} {:>12}\n", pass, name, k.flops, k.bytes,
                         format_seconds(k.time_s));
    }
  for (const auto& [pass, cost] : passes)
    if (cost->host_wait_s > 0)
      out += fmt::format("  {:10} {:14} {:>12} {:>12} {:>12}   the device waits for the host\n",
                         pass, "host-bound", "", "", format_seconds(cost->host_wait_s));
  out += fmt::format("  optimizer step moves {:.4e} bytes\n", e.optimizer_bytes);
}

// Narrow, to fit kTableColumns: without the time per call (total / calls but for a ZeRO
// reduce-scatter's traffic; in --wide and the JSON), and the group by its size alone (the name
// says which, but for a pipeline send's pp), so that the longest names (an expert_dp
// reduce-scatter's) fit too.
void append_collectives(std::string& out, const Estimate& e, bool wide) {
  out += '\n';
  out += paragraph(
      fmt::format("Collectives of stage {} per step (busbw as nccl-tests, GB/s; "
                  "{}a ZeRO reduce-scatter's total adds its own memory traffic "
                  "after each call)",
                  e.slowest_stage,
                  wide ? ""
                       : "ranks: in the group its name gives, pp for a send; the time per call in "
                         "--wide and the JSON; "),
      wide);
  const auto row = [&](std::string_view name, std::string_view group, std::string_view level,
                       std::string_view bytes, std::string_view calls, std::string_view per_call,
                       std::string_view busbw, std::string_view total, std::string_view exposed) {
    return wide ? fmt::format("  {:32} {:>9} {:>13} {:>12} {:>6} {:>10} {:>7} {:>10} {:>10}\n",
                              name, group, level, bytes, calls, per_call, busbw, total, exposed)
                : fmt::format("  {:36} {:>5} {:>10} {:>10} {:>5} {:>6} {:>9} {:>9}\n", name, group,
                              level, bytes, calls, busbw, total, exposed);
  };
  out += row("name", wide ? "group" : "ranks", "level", "size (B)", "calls", "per call", "busbw",
             "total", "exposed");
  for (const CollectiveEstimate& c : e.collectives) {
    const std::string group =
        wide ? fmt::format("{:>5}({:>3})", enum_name(c.action.group, kGroupNames), c.span.size)
             : std::to_string(c.span.size);
    out += row(c.name(), group, c.level_name, std::to_string(c.action.bytes),
               std::to_string(c.calls_per_step), format_seconds(c.cost.time_s),
               fmt::format("{:.1f}", c.cost.busbw_GBps), format_seconds(c.total_s),
               format_seconds(c.exposed_s));
  }
  out += fmt::format("  exposed in all {}\n", format_seconds(e.exposed_comm_s));
  if (const Profile* p = e.options.profile) {
    const std::string rates = fmt::format(
        "Priced with the profile of {}: GEMMs, memory-bound kernels and the optimizer at its "
        "measured rates,",
        p->device);
    const std::string rest = fmt::format(
        "{} of {} collectives by its fits (the rest by the model on its measured links), "
        "attention from the datasheet",
        collectives_from_profile(e), e.collectives.size());
    out += wide ? fmt::format("\n{}\n  {}\n", rates, rest)
                : fmt::format("\n{}", wrap_words(rates + " " + rest, kTableColumns, 2));
  }
}

}  // namespace

std::string format_estimate_table(const Estimate& e, bool wide) {
  std::string out;
  append_step(out, e, wide);
  append_memory(out, e, wide);
  append_compute(out, e, wide);
  append_collectives(out, e, wide);
  if (e.train_time_s > 0)
    out += fmt::format("\nTraining run: {} ({:.2f} days), cost {:.2f} at the given price\n",
                       format_seconds(e.train_time_s), e.train_time_s / 86400, e.train_cost);
  return out;
}

}  // namespace shardplan
