#include "simulator/estimate_report.h"

#include <fmt/format.h>

namespace shardplan {

namespace {

using nlohmann::json;

json memory_to_json(const RankMemory& r) {
  json items = json::object();
  for (const MemoryItem& item : memory_items(r)) items[std::string(item.name) + "_bytes"] = item.bytes;
  return json{{"stage", r.stage},
              {"parameters_bytes", r.state.parameters},
              {"gradients_bytes", r.state.gradients},
              {"optimizer_bytes", r.state.optimizer()},
              {"activations_bytes", r.activations_bytes()},
              {"other_bytes", r.other_bytes()},
              {"peak_bytes", r.peak_bytes()},
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
  return json{{"name", c.call.name},
              {"collective", enum_name(c.call.collective, kCollectiveNames)},
              {"group", enum_name(c.call.group, kGroupNames)},
              {"group_size", c.span.size},
              {"nodes", c.span.nodes},
              {"level", c.span.level},
              {"level_name", c.level_name},
              {"algorithm", enum_name(c.cost.algorithm, kAlgorithmNames)},
              {"bytes", c.call.bytes},
              {"frequency", enum_name(c.call.frequency, kCommFrequencyNames)},
              {"calls_per_step", c.calls_per_step},
              {"overlaps", enum_name(c.call.window, kCommWindowNames)},
              {"time_s", c.cost.time_s},
              {"algbw_GBps", c.cost.algbw_GBps},
              {"busbw_GBps", c.cost.busbw_GBps},
              {"total_s", c.total_s},
              {"exposed_s", c.exposed_s},
              {"volume_bytes", c.volume_bytes}};
}

}  // namespace

json estimate_to_json(const Estimate& e) {
  json j{{"step_time_s", e.step_time_s},
         {"tokens_per_s", e.tokens_per_s},
         {"tflops_per_device", e.tflops_per_device},
         {"mfu", e.mfu},
         {"hfu", e.hfu},
         {"bubble_fraction", e.bubble_fraction},
         {"exposed_comm_s", e.exposed_comm_s},
         {"fits", e.fits},
         {"world", e.world},
         {"tokens_per_step", e.tokens_per_step},
         {"model_flops_per_step", e.model_flops_per_step},
         {"hardware_flops_per_step", e.hardware_flops_per_step},
         {"peak_flops_per_device", e.peak_flops_per_device},
         {"options", {{"flash_attention", e.options.flash_attention}, {"dropout", e.options.dropout}}}};
  j["time"] = {{"compute_s", e.time.compute_s},         {"recompute_s", e.time.recompute_s},
               {"microbatch_comm_s", e.time.microbatch_comm_s}, {"bubble_s", e.time.bubble_s},
               {"step_comm_s", e.time.step_comm_s},     {"optimizer_s", e.time.optimizer_s}};
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
                  {"recompute", pass_to_json(e.compute.recompute)},
                  {"optimizer_bytes", e.optimizer_bytes}};
  j["collectives"] = json::array();
  for (const CollectiveEstimate& c : e.collectives) j["collectives"].push_back(collective_to_json(c));
  j["train"] = {{"time_s", e.train_time_s}, {"cost", e.train_cost}};
  return j;
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double gib(int64_t bytes) { return static_cast<double>(bytes) / kGiB; }

void append_step(std::string& out, const Estimate& e) {
  const StepTime& t = e.time;
  out += fmt::format("Step ({} devices, {} tokens)\n", e.world, e.tokens_per_step);
  out += fmt::format("  step time            {:10.4f} s\n", e.step_time_s);
  out += fmt::format("    compute            {:10.4f} s   forward + backward, slowest stage (stage {})\n",
                     t.compute_s, e.slowest_stage);
  out += fmt::format("    recompute          {:10.4f} s\n", t.recompute_s);
  out += fmt::format("    exposed comm       {:10.4f} s   per micro-batch: tp, cp, ep, pp, ZeRO-3\n",
                     t.microbatch_comm_s);
  out += fmt::format("    pipeline bubble    {:10.4f} s   {:.1f}% of the pipeline time\n", t.bubble_s,
                     100 * e.bubble_fraction);
  out += fmt::format("    exposed comm       {:10.4f} s   per step: data parallel, embedding\n", t.step_comm_s);
  out += fmt::format("    optimizer          {:10.4f} s\n", t.optimizer_s);
  out += fmt::format("  tokens/s             {:10.1f}\n", e.tokens_per_s);
  out += fmt::format("  model FLOPs/step     {:10.4e}   Narayanan et al. 2021 eq. 3, no recompute\n",
                     e.model_flops_per_step);
  out += fmt::format("  hardware FLOPs/step  {:10.4e}   with recompute\n", e.hardware_flops_per_step);
  out += fmt::format("  TFLOP/s per device   {:10.1f}   model FLOPs / step time / {} devices\n",
                     e.tflops_per_device, e.world);
  out += fmt::format("  MFU                  {:9.1f}%   of {:.0f} TFLOP/s dense peak per device\n", 100 * e.mfu,
                     e.peak_flops_per_device / 1e12);
  out += fmt::format("  HFU                  {:9.1f}%\n", 100 * e.hfu);
}

void append_memory(std::string& out, const Estimate& e) {
  const RankMemory& r = e.memory();
  out += fmt::format("\nMemory of the worst rank (rank {}, stage {}, {} micro-batches in flight)\n",
                     e.worst_rank, r.stage, r.inflight_microbatches);
  for (const MemoryItem& item : memory_items(r))
    out += fmt::format("  {:26} {:10.3f} GiB\n", item.name, gib(item.bytes));
  out += fmt::format("  {:26} {:10.3f} GiB   (reserve not included)\n", "peak", gib(r.peak_bytes()));
  out += fmt::format("  {:26} {:10.3f} GiB\n", "capacity", gib(r.capacity_bytes));
  if (e.overflow)
    out += fmt::format("  does not fit: {} needs {:.3f} GiB, {:.3f} GiB free\n", e.overflow->item,
                       gib(e.overflow->needed_bytes), gib(e.overflow->free_bytes));
  else if (!e.fits)
    out += "  does not fit on another stage (see the JSON's stages)\n";
  else
    out += fmt::format("  fits: {:.3f} GiB free\n",
                       gib(r.capacity_bytes - r.runtime_reserved_bytes - r.peak_bytes()));
}

void append_compute(std::string& out, const Estimate& e) {
  out += fmt::format("\nCompute of one micro-batch on stage {}     TFLOP      GB   time (ms)\n", e.slowest_stage);
  const std::pair<const char*, const PassCost*> passes[] = {
      {"forward", &e.compute.forward}, {"backward", &e.compute.backward}, {"recompute", &e.compute.recompute}};
  for (const auto& [pass, cost] : passes)
    for (const auto& [kind, name] : kOpKindNames) {
      const KindCost& k = (*cost)[kind];
      out += fmt::format("  {:10} {:28} {:8.3f} {:7.3f} {:11.3f}\n", pass, name, k.flops / 1e12, k.bytes / 1e9,
                         k.time_s * 1e3);
    }
  out += fmt::format("  optimizer step moves {:.3f} GB\n", e.optimizer_bytes / 1e9);
}

void append_collectives(std::string& out, const Estimate& e) {
  out += fmt::format("\nCollectives of stage {} per step\n", e.slowest_stage);
  out += fmt::format("  {:32} {:>12} {:>11} {:>12} {:>7} {:>10} {:>9} {:>10} {:>10}\n", "name", "group",
                     "level", "size (B)", "calls", "call (us)", "busbw", "total (s)", "exposed");
  for (const CollectiveEstimate& c : e.collectives)
    out += fmt::format("  {:32} {:>8}({:>3}) {:>11} {:>12} {:>7} {:>10.1f} {:>9.1f} {:>10.4f} {:>10.4f}\n",
                       c.call.name, enum_name(c.call.group, kGroupNames), c.span.size, c.level_name,
                       c.call.bytes, c.calls_per_step, c.cost.time_s * 1e6, c.cost.busbw_GBps, c.total_s,
                       c.exposed_s);
  out += fmt::format("  exposed in all {:.4f} s (busbw in GB/s as nccl-tests)\n", e.exposed_comm_s);
}

}  // namespace

std::string format_estimate_table(const Estimate& e) {
  std::string out;
  append_step(out, e);
  append_memory(out, e);
  append_compute(out, e);
  append_collectives(out, e);
  if (e.train_time_s > 0)
    out += fmt::format("\nTraining run: {:.2f} days, cost {:.0f}\n", e.train_time_s / 86400, e.train_cost);
  return out;
}

}  // namespace shardplan
