// `shardplan describe MODEL|CLUSTER`: what a description resolves to — a model's shape and its
// parameters by component, or a cluster's devices and interconnect levels with their bandwidths.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/error.h"
#include "core/human_format.h"
#include "core/json_reader.h"
#include "core/model.h"
#include "core/presets.h"
#include "tools/cli_inputs.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct DescribeOptions {
  std::string target;
  std::optional<int> nodes;
  std::string format = "table";
  bool wide = false;
};

bool is_preset(const std::string& folder, const std::string& name) {
  const auto names = preset_names(folder);
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A cluster file has devices and levels; anything else is read as a model.
bool looks_like_cluster(const std::string& target) {
  if (is_preset("topologies", target)) return true;
  if (is_preset("models", target)) return false;
  if (!std::filesystem::is_regular_file(target)) return false;
  const auto j = read_json_file(target);
  return j.is_object() && (j.contains("levels") || j.contains("devices_per_node"));
}

void print_model(const Model& m, bool wide) {
  const ParamCounts p = count_parameters(m);
  fmt::print("model {}\n", m.name);
  fmt::print("  layers {}, hidden {}, heads {} (kv heads {}, head dim {}), ffn hidden {}\n",
             m.num_layers, m.hidden, m.num_heads, m.num_kv_heads, m.head_dim, m.ffn_hidden);
  fmt::print("{}",
             paragraph(fmt::format("vocab {}, max sequence {}, {} MLP, {}, {} positions, "
                                   "embeddings {}",
                                   m.vocab, m.max_seq, enum_name(m.activation, kActivationNames),
                                   enum_name(m.norm, kNormNames),
                                   enum_name(m.position_embedding, kPositionEmbeddingNames),
                                   m.tied_embeddings ? "tied to the LM head" : "untied"),
                       wide, 4, 2));
  if (m.is_moe())
    fmt::print("  MoE: {} experts, top-{}, expert ffn hidden {}, {} of {} layers\n",
               m.moe.num_experts, m.moe.top_k, m.moe.expert_ffn_hidden, m.num_moe_layers(),
               m.num_layers);
  fmt::print("\n  {:<20} {:>16} {:>10} {:>7}\n", "parameters", "count", "", "share");
  const double total = static_cast<double>(p.total());
  auto row = [&](const char* name, int64_t n) {
    if (n == 0) return;
    fmt::print("  {:<20} {:>16} {:>10} {:>7}\n", name, n, format_count(static_cast<double>(n)),
               format_percent(static_cast<double>(n) / total));
  };
  row("embedding", p.embedding);
  row("position embedding", p.position_embedding);
  row("attention", p.attention);
  row("mlp", p.mlp);
  row("experts", p.experts);
  row("router", p.router);
  row("norms", p.norms);
  row("lm head", p.head);
  row("total", p.total());
  if (m.is_moe()) row("active per token", p.active);
}

// A level's bandwidth in lines: per device, or for a scale-out level the NICs', what that is per
// device and any oversubscription. Wide prints them on one line (", " before the
// oversubscription).
std::vector<std::string> level_bandwidth(const Cluster& c, const InterconnectLevel& l) {
  if (!l.is_scale_out()) return {fmt::format("{:g} GB/s per device", l.bandwidth_GBps)};
  std::vector<std::string> lines{
      fmt::format("{} NICs x {:g} GB/s per node", l.nics_per_node, l.nic_GBps),
      fmt::format("= {:g} GB/s per device", l.nics_per_node * l.nic_GBps / c.devices_per_node)};
  if (l.oversubscription > 1)
    lines.push_back(fmt::format("{:g}:1 oversubscribed", l.oversubscription));
  return lines;
}

// Narrow: the latency before the bandwidth, whose lines go on under it, to fit kTableColumns.
void print_level(const Cluster& c, size_t i, bool wide) {
  const InterconnectLevel& l = c.levels[i];
  const std::string cells = fmt::format("  {} {:<12} {:<13} spans {:>6} devices  ", i, l.name,
                                        enum_name(l.kind, kLinkKindNames), c.level_span(i));
  const std::string latency = fmt::format("latency {:g} us", l.latency_us);
  const std::vector<std::string> bandwidth = level_bandwidth(c, l);
  if (wide) {
    std::string joined = bandwidth[0];
    for (size_t k = 1; k < bandwidth.size(); ++k) joined += (k == 1 ? " " : ", ") + bandwidth[k];
    fmt::print("{}{}  {}\n", cells, joined, latency);
    return;
  }
  const std::string first = cells + latency + "  ";
  fmt::print("{}{}\n", first, bandwidth[0]);
  for (size_t k = 1; k < bandwidth.size(); ++k)
    fmt::print("{}{}\n", std::string(first.size(), ' '), bandwidth[k]);
}

void print_cluster(const Cluster& c, bool wide) {
  const Device& d = c.device;
  fmt::print("cluster {}: {} nodes x {} devices = {} devices\n", c.name, c.nodes,
             c.devices_per_node, c.world());
  const std::string device = fmt::format(
      "device {}: {:g} GiB ({:g} GiB for the CUDA context and driver; NCCL and cuBLAS per "
      "layout), {:g} GB/s memory",
      d.name, d.memory_GiB, d.reserved_GiB, d.memory_GBps);
  fmt::print("{}", paragraph(device, wide, 4, 2));
  fmt::print("  dense peak: {}bf16 {:g}, fp16 {:g}, tf32 {:g}, fp32 {:g} TFLOP/s\n",
             d.peak_tflops_fp8 > 0 ? fmt::format("fp8 {:g}, ", d.peak_tflops_fp8) : "",
             d.peak_tflops_bf16, d.peak_tflops_fp16, d.peak_tflops_tf32, d.peak_tflops_fp32);
  const DeviceEfficiency& e = d.efficiency;
  fmt::print("  achieved: GEMM {}{}, attention {} forward / {} backward, memory {} of peak{}\n",
             format_percent(e.matmul),
             e.matmul_fp8 > 0 ? fmt::format(" (FP8 {})", format_percent(e.matmul_fp8)) : "",
             format_percent(e.attention_forward), format_percent(e.attention_backward),
             format_percent(e.memory), e.sm_count ? fmt::format(", {} SMs", e.sm_count) : "");
  fmt::print("\n  interconnect levels, innermost first:\n");
  for (size_t i = 0; i < c.levels.size(); ++i) print_level(c, i, wide);
}

int run_describe(const DescribeOptions& o) {
  const bool json = o.format == "json";
  if (looks_like_cluster(o.target)) {
    const Cluster c = load_cluster(o.target, o.nodes);
    if (json)
      fmt::print("{}\n", cluster_to_json(c).dump(2));
    else
      print_cluster(c, o.wide);
    return 0;
  }
  if (o.nodes)
    throw InputError("--nodes", "", "applies to a cluster, and " + o.target + " is a model");
  const Model m = load_model(o.target);
  if (json) {
    auto j = model_to_json(m);
    const ParamCounts p = count_parameters(m);
    j["parameters"] = {{"embedding", p.embedding}, {"position_embedding", p.position_embedding},
                       {"attention", p.attention}, {"mlp", p.mlp},
                       {"experts", p.experts},     {"router", p.router},
                       {"norms", p.norms},         {"head", p.head},
                       {"total", p.total()},       {"active", p.active}};
    fmt::print("{}\n", j.dump(2));
  } else {
    print_model(m, o.wide);
  }
  return 0;
}

}  // namespace

Subcommand add_describe(CLI::App& root) {
  auto o = std::make_shared<DescribeOptions>();
  CLI::App* app = root.add_subcommand(
      "describe",
      "Print what a model or cluster description resolves to (parameter counts by "
      "component; devices, levels and bandwidths)");
  app->add_option("target", o->target,
                  "Model or cluster: a preset name (llama3-70b, dgx-h100), our JSON, or a Hugging "
                  "Face config.json or its folder")
      ->required();
  app->add_option("--nodes", o->nodes, "Scale a cluster's node description to N nodes")
      ->check(kPositive);
  app->add_option("--format", o->format, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  app->add_flag("--wide", o->wide,
                "Print lines whole, however wide (default: they fit 100 columns, long ones "
                "wrapped)");
  return {app, [o] { return run_describe(*o); }};
}

}  // namespace shardplan::cli
