#include "core/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <climits>
#include <cmath>
#include <set>
#include <string_view>

#include "core/error.h"
#include "core/json_reader.h"

namespace shardplan {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

// The member holding the dense peak for a dtype; one switch serves reading, writing and lookup.
template <class D>
auto& peak_slot(D& d, Dtype t) {
  switch (t) {
    case Dtype::fp32:
      return d.peak_tflops_fp32;
    case Dtype::tf32:
      return d.peak_tflops_tf32;
    case Dtype::bf16:
      return d.peak_tflops_bf16;
    case Dtype::fp16:
      return d.peak_tflops_fp16;
  }
  assert(false && "unknown dtype");
  return d.peak_tflops_fp32;
}

// Every key an object accepts, checked before anything is read so that a misspelt key is reported
// as unknown (with the accepted ones listed) rather than as a missing required field.
template <size_t N>
void reject_unknown_first(ObjectReader& r, const std::array<std::string_view, N>& keys) {
  for (std::string_view k : keys) r.ignore({k});
  r.reject_unknown();
}

constexpr auto kClusterKeys = std::to_array<std::string_view>(
    {"name", "source", "nodes", "devices_per_node", "device", "levels"});
constexpr auto kDeviceKeys = std::to_array<std::string_view>(
    {"name", "source", "arch", "memory_GiB", "reserved_GiB", "memory_GBps", "best_published_mfu",
     "best_published_mfu_fp8", "peak_tflops", "efficiency"});
constexpr auto kEfficiencyKeys = std::to_array<std::string_view>(
    {"source", "matmul", "matmul_fp8", "attention_forward", "attention_backward", "flash2_forward",
     "flash2_backward", "flash1_forward", "flash1_backward", "memory", "sm_count",
     "kernel_overhead_us", "sustained_clock"});
constexpr auto kPeakKeys =
    std::to_array<std::string_view>({"source", "fp32", "tf32", "bf16", "fp16", "fp8"});
constexpr auto kLevelKeys = std::to_array<std::string_view>(
    {"name", "kind", "source", "span_devices", "bandwidth_GBps", "nics_per_node", "nic_GBps",
     "latency_us", "oversubscription", "nccl_channels", "nvlink_sharp"});

Device device_from_json(ObjectReader r) {
  reject_unknown_first(r, kDeviceKeys);
  Device d;
  d.name = r.string("name");
  if (r.has("arch")) {
    const std::string arch = r.string("arch");
    const auto a = enum_from_name(arch, kGpuArchNames);
    if (!a)
      r.fail("arch", fmt::format("unknown GPU architecture \"{}\"", arch),
             enum_choices(kGpuArchNames));
    d.arch = *a;
  }
  d.memory_GiB = r.number("memory_GiB");
  d.reserved_GiB = r.number_or("reserved_GiB", 0);
  d.memory_GBps = r.number("memory_GBps");
  d.best_published_mfu = r.number_or("best_published_mfu", 0);
  d.best_published_mfu_fp8 = r.number_or("best_published_mfu_fp8", 0);
  ObjectReader peak = r.object("peak_tflops");
  reject_unknown_first(peak, kPeakKeys);
  for (const auto& [dtype, name] : kDtypeNames) peak_slot(d, dtype) = peak.number_or(name, 0);
  d.peak_tflops_fp8 = peak.number_or("fp8", 0);
  ObjectReader eff = r.object("efficiency");
  reject_unknown_first(eff, kEfficiencyKeys);
  d.efficiency.matmul = eff.number("matmul");
  d.efficiency.matmul_fp8 = eff.number_or("matmul_fp8", 0);
  d.efficiency.attention_forward = eff.number("attention_forward");
  d.efficiency.attention_backward = eff.number("attention_backward");
  d.efficiency.flash2_forward = eff.number_or("flash2_forward", d.efficiency.attention_forward);
  d.efficiency.flash2_backward = eff.number_or("flash2_backward", d.efficiency.attention_backward);
  d.efficiency.flash1_forward = eff.number_or("flash1_forward", d.efficiency.flash2_forward);
  d.efficiency.flash1_backward = eff.number_or("flash1_backward", d.efficiency.flash2_backward);
  d.efficiency.memory = eff.number("memory");
  d.efficiency.sm_count = int_field_or(eff, "sm_count", 0);
  d.efficiency.kernel_overhead_us = eff.number_or("kernel_overhead_us", 0);
  d.efficiency.sustained_clock = eff.number_or("sustained_clock", 1);
  return d;
}

InterconnectLevel level_from_json(ObjectReader r) {
  reject_unknown_first(r, kLevelKeys);
  InterconnectLevel l;
  l.name = r.string("name");
  const std::string kind = r.string("kind");
  const auto k = enum_from_name(kind, kLinkKindNames);
  if (!k)
    r.fail("kind", fmt::format("unknown link kind \"{}\"", kind), enum_choices(kLinkKindNames));
  l.kind = *k;
  l.span_devices = r.integer_or("span_devices", 0);
  // Scale-up levels give a per-device bandwidth, scale-out levels NICs shared by a node.
  if (l.is_scale_out()) {
    if (r.has("bandwidth_GBps"))
      r.fail("bandwidth_GBps", fmt::format("a {} level is described per NIC", kind),
             "give nics_per_node and nic_GBps (per NIC, one direction) instead");
    l.nics_per_node = int_field(r, "nics_per_node");
    l.nic_GBps = r.number("nic_GBps");
  } else {
    for (std::string_view key : {"nics_per_node", "nic_GBps"})
      if (r.has(key))
        r.fail(
            key,
            fmt::format("only scale-out levels (infiniband, roce) have NICs, this one is {}", kind),
            "give bandwidth_GBps per device, one direction");
    l.bandwidth_GBps = r.number("bandwidth_GBps");
  }
  l.latency_us = r.number("latency_us");
  l.oversubscription = r.number_or("oversubscription", 1);
  l.nccl_channels = int_field_or(r, "nccl_channels", 0);
  if (r.has("nvlink_sharp")) {
    if (l.kind != LinkKind::nvlink)
      r.fail("nvlink_sharp",
             fmt::format("only an nvlink level has NVLink SHARP, this one is {}", kind),
             "remove nvlink_sharp");
    l.nvlink_sharp = r.boolean("nvlink_sharp");
  }
  return l;
}

std::string level_field(size_t i, std::string_view key) {
  return fmt::format("levels[{}].{}", i, key);
}

void validate_device(const Device& d, const std::string& file) {
  const DeviceEfficiency& e = d.efficiency;
  auto positive = [&](double v, const char* field) {
    if (!(v > 0)) throw InputError(file, field, fmt::format("must be positive, found {:g}", v));
  };
  positive(d.memory_GiB, "device.memory_GiB");
  positive(d.memory_GBps, "device.memory_GBps");
  if (!(d.reserved_GiB >= 0 && d.reserved_GiB < d.memory_GiB))
    throw InputError(file, "device.reserved_GiB",
                     fmt::format("{:g} must be at least 0 and below memory_GiB={:g}",
                                 d.reserved_GiB, d.memory_GiB));
  for (const auto& [value, key] : {std::pair{d.best_published_mfu, "best_published_mfu"},
                                   {d.best_published_mfu_fp8, "best_published_mfu_fp8"}})
    if (!(value >= 0 && value < 1))
      throw InputError(file, fmt::format("device.{}", key),
                       fmt::format("must be a fraction in [0, 1), found {:g}", value),
                       "0 when no published figure is known");
  // FP8 GEMMs need both their peak and what fraction of it they reach, or neither.
  if (!(d.peak_tflops_fp8 >= 0))
    throw InputError(file, "device.peak_tflops.fp8",
                     fmt::format("must not be negative, found {:g}", d.peak_tflops_fp8),
                     "0 means no FP8 tensor cores");
  if (!(e.matmul_fp8 >= 0 && e.matmul_fp8 <= 1))
    throw InputError(
        file, "device.efficiency.matmul_fp8",
        fmt::format("must be a fraction of the FP8 peak in [0, 1], found {:g}", e.matmul_fp8));
  if ((d.peak_tflops_fp8 > 0) != (e.matmul_fp8 > 0))
    throw InputError(
        file, d.peak_tflops_fp8 > 0 ? "device.efficiency.matmul_fp8" : "device.peak_tflops.fp8",
        d.peak_tflops_fp8 > 0
            ? fmt::format("is 0, and peak_tflops.fp8 is {:g}", d.peak_tflops_fp8)
            : fmt::format("is 0, and efficiency.matmul_fp8 is {:g}", e.matmul_fp8),
        "give both the FP8 dense peak and the fraction of it FP8 GEMMs reach");
  for (const auto& [value, key] : {std::pair{e.matmul, "matmul"},
                                   {e.attention_forward, "attention_forward"},
                                   {e.attention_backward, "attention_backward"},
                                   {e.flash2_forward, "flash2_forward"},
                                   {e.flash2_backward, "flash2_backward"},
                                   {e.flash1_forward, "flash1_forward"},
                                   {e.flash1_backward, "flash1_backward"},
                                   {e.sustained_clock, "sustained_clock"},
                                   {e.memory, "memory"}})
    if (!(value > 0 && value <= 1))
      throw InputError(file, fmt::format("device.efficiency.{}", key),
                       fmt::format("must be a fraction of the peak in (0, 1], found {:g}", value),
                       "achieved rate ÷ datasheet peak, e.g. 0.8 for a GEMM at 80% of peak");
  if (!(e.kernel_overhead_us >= 0 && e.kernel_overhead_us <= 1000))
    throw InputError(
        file, "device.efficiency.kernel_overhead_us",
        fmt::format("must be between 0 and 1000 microseconds, found {:g}", e.kernel_overhead_us));
  if (e.sm_count < 0)
    throw InputError(file, "device.efficiency.sm_count",
                     fmt::format("must not be negative, found {}", e.sm_count),
                     "0: no wave quantization");
  bool any = false;
  for (const auto& [dtype, name] : kDtypeNames) {
    const double v = d.peak_tflops(dtype);
    if (!(v >= 0))
      throw InputError(file, fmt::format("device.peak_tflops.{}", name),
                       fmt::format("must not be negative, found {:g}", v), "0 means not supported");
    any = any || v > 0;
  }
  if (!any)
    throw InputError(
        file, "device.peak_tflops", "no dtype has a positive peak",
        "give the dense peak of at least one of fp32, tf32, bf16, fp16 in 10^12 FLOP/s");
}

// A scale-up level needs bandwidth_GBps and no NICs; a scale-out level NICs and no bandwidth_GBps.
void validate_level_links(const InterconnectLevel& l, size_t i, const std::string& file) {
  const std::string_view kind = enum_name(l.kind, kLinkKindNames);
  if (l.is_scale_out()) {
    if (l.nics_per_node <= 0)
      throw InputError(
          file, level_field(i, "nics_per_node"),
          fmt::format("a {} level needs NICs per node, found {}", kind, l.nics_per_node));
    if (!(l.nic_GBps > 0))
      throw InputError(file, level_field(i, "nic_GBps"),
                       fmt::format("a {} level needs a positive bandwidth per NIC, found {:g}",
                                   kind, l.nic_GBps));
    if (l.bandwidth_GBps != 0)
      throw InputError(file, level_field(i, "bandwidth_GBps"),
                       fmt::format("a {} level is described per NIC", kind),
                       "use nics_per_node and nic_GBps");
    return;
  }
  if (!(l.bandwidth_GBps > 0))
    throw InputError(file, level_field(i, "bandwidth_GBps"),
                     fmt::format("a {} level needs a positive bandwidth per device, found {:g}",
                                 kind, l.bandwidth_GBps));
  if (l.nics_per_node != 0 || l.nic_GBps != 0)
    throw InputError(
        file, level_field(i, l.nics_per_node != 0 ? "nics_per_node" : "nic_GBps"),
        fmt::format("only scale-out levels (infiniband, roce) have NICs, this one is {}", kind));
}

// Domains of a level are `span` consecutive devices. They sit inside one node or hold whole nodes,
// nest inside the next level's domains, and tile the cluster unless one domain holds all of it.
void validate_level_span(const Cluster& c, size_t i, const std::string& file) {
  const InterconnectLevel& l = c.levels[i];
  const std::string field = level_field(i, "span_devices");
  const int64_t span = l.span_devices;
  const int dpn = c.devices_per_node;
  if (span < 0)
    throw InputError(file, field, fmt::format("must not be negative, found {}", span),
                     "0 means the whole cluster");
  if (i > 0 && c.levels[i - 1].span_devices == 0)
    throw InputError(file, level_field(i - 1, "span_devices"),
                     "0 (the whole cluster) is for the outermost level only",
                     "levels go innermost first");
  if (span == 0) return;
  if (span < dpn && dpn % span != 0)
    throw InputError(
        file, field,
        fmt::format("domains of {} devices would straddle nodes of {} devices", span, dpn),
        "a level smaller than a node must divide devices_per_node");
  if (span > dpn && span % dpn != 0)
    throw InputError(file, field,
                     fmt::format("{} is not a whole number of nodes of {} devices", span, dpn));
  if (l.is_scale_out() && span % dpn != 0)
    throw InputError(
        file, field,
        fmt::format("a scale-out level joins whole nodes, {} < {} devices", span, dpn));
  if (span < c.world() && c.world() % span != 0) {
    const int64_t n =
        span / dpn;  // span holds whole nodes here: it is above a node and is not a divisor
    throw InputError(
        file, field,
        fmt::format("{} does not divide the {} devices ({} nodes x {} devices_per_node)", span,
                    c.world(), c.nodes, dpn),
        fmt::format("with this node description use at most {} nodes (part of one domain) or a "
                    "multiple of {}",
                    n, n));
  }
  if (i == 0) return;
  const int64_t inner = c.levels[i - 1].span_devices;
  if (span <= inner || span % inner != 0)
    throw InputError(
        file, field,
        fmt::format("{} must be a larger multiple of levels[{}]'s span {}", span, i - 1, inner),
        "levels go innermost first, each domain made of whole inner domains");
}

}  // namespace

bool fp8_gemms_tn_only(const Device& d) {
  return d.arch != GpuArch::blackwell;
}

double Device::peak_tflops(Dtype d) const {
  return peak_slot(*this, d);
}

int64_t Device::memory_bytes() const {
  return std::llround(memory_GiB * kBytesPerGiB);
}

int64_t Device::reserved_bytes() const {
  return std::llround(reserved_GiB * kBytesPerGiB);
}

int nccl_channels(const InterconnectLevel& l) {
  constexpr int kMaxChannels = 32;
  constexpr double kNvlinkLink_GBps = 25;
  if (l.nccl_channels > 0) return l.nccl_channels;
  if (l.is_scale_out()) return std::clamp(2 * l.nics_per_node, 2, kMaxChannels);
  if (l.kind != LinkKind::nvlink) return 2;
  return std::clamp(static_cast<int>(std::lround(l.bandwidth_GBps / kNvlinkLink_GBps)), 2,
                    kMaxChannels);
}

int64_t Cluster::level_span(size_t i) const {
  assert(i < levels.size());
  const int64_t span = levels[i].span_devices;
  return span == 0 ? world() : std::min(span, world());
}

Cluster cluster_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file);
  reject_unknown_first(r, kClusterKeys);
  Cluster c;
  c.name = r.string("name");
  c.nodes = int_field_or(r, "nodes", 1);
  c.devices_per_node = int_field(r, "devices_per_node");
  c.device = device_from_json(r.object("device"));
  for (ObjectReader& level : r.objects("levels")) c.levels.push_back(level_from_json(level));
  validate_cluster(c, file);
  return c;
}

nlohmann::json cluster_to_json(const Cluster& c) {
  const Device& d = c.device;
  nlohmann::json peak = nlohmann::json::object();
  for (const auto& [dtype, name] : kDtypeNames) peak[std::string(name)] = d.peak_tflops(dtype);
  peak["fp8"] = d.peak_tflops_fp8;
  nlohmann::json levels = nlohmann::json::array();
  for (const InterconnectLevel& l : c.levels) {
    nlohmann::json level = {{"name", l.name},
                            {"kind", enum_name(l.kind, kLinkKindNames)},
                            {"span_devices", l.span_devices},
                            {"latency_us", l.latency_us},
                            {"oversubscription", l.oversubscription}};
    if (l.nccl_channels > 0) level["nccl_channels"] = l.nccl_channels;
    if (l.nvlink_sharp) level["nvlink_sharp"] = true;
    if (l.is_scale_out()) {
      level["nics_per_node"] = l.nics_per_node;
      level["nic_GBps"] = l.nic_GBps;
    } else {
      level["bandwidth_GBps"] = l.bandwidth_GBps;
    }
    levels.push_back(std::move(level));
  }
  return {{"name", c.name},
          {"nodes", c.nodes},
          {"devices_per_node", c.devices_per_node},
          {"device",
           {{"name", d.name},
            {"arch", enum_name(d.arch, kGpuArchNames)},
            {"memory_GiB", d.memory_GiB},
            {"reserved_GiB", d.reserved_GiB},
            {"memory_GBps", d.memory_GBps},
            {"best_published_mfu", d.best_published_mfu},
            {"best_published_mfu_fp8", d.best_published_mfu_fp8},
            {"peak_tflops", peak},
            {"efficiency",
             {{"matmul", d.efficiency.matmul},
              {"matmul_fp8", d.efficiency.matmul_fp8},
              {"attention_forward", d.efficiency.attention_forward},
              {"attention_backward", d.efficiency.attention_backward},
              {"flash2_forward", d.efficiency.flash2_forward},
              {"flash2_backward", d.efficiency.flash2_backward},
              {"flash1_forward", d.efficiency.flash1_forward},
              {"flash1_backward", d.efficiency.flash1_backward},
              {"memory", d.efficiency.memory},
              {"sm_count", d.efficiency.sm_count},
              {"kernel_overhead_us", d.efficiency.kernel_overhead_us},
              {"sustained_clock", d.efficiency.sustained_clock}}}}},
          {"levels", levels}};
}

Cluster with_nodes(Cluster c, int nodes, const std::string& file) {
  c.nodes = nodes;
  validate_cluster(c, file);
  return c;
}

void validate_cluster(const Cluster& c, const std::string& file) {
  if (c.nodes <= 0)
    throw InputError(file, "nodes", fmt::format("must be positive, found {}", c.nodes),
                     "--nodes N sets it");
  if (c.devices_per_node <= 0)
    throw InputError(file, "devices_per_node",
                     fmt::format("must be positive, found {}", c.devices_per_node));
  validate_device(c.device, file);
  if (c.levels.empty())
    throw InputError(file, "levels", "at least one interconnect level is needed",
                     "e.g. {\"name\": \"nvlink\", \"kind\": \"nvlink\", \"bandwidth_GBps\": 450, "
                     "\"latency_us\": 0.6}");
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < c.levels.size(); ++i) {
    const InterconnectLevel& l = c.levels[i];
    if (l.name.empty()) throw InputError(file, level_field(i, "name"), "must not be empty");
    if (!names.insert(l.name).second)
      throw InputError(file, level_field(i, "name"),
                       fmt::format("\"{}\" names two levels", l.name));
    validate_level_span(c, i, file);
    validate_level_links(l, i, file);
    if (!(l.latency_us >= 0))
      throw InputError(file, level_field(i, "latency_us"),
                       fmt::format("must not be negative, found {:g}", l.latency_us));
    if (l.nccl_channels < 0 || l.nccl_channels > 64)
      throw InputError(
          file, level_field(i, "nccl_channels"),
          fmt::format("must be 0 (derived) to 64 (NCCL's MAXCHANNELS), found {}", l.nccl_channels),
          "leave it out to derive it from the links");
    if (!(l.oversubscription >= 1))
      throw InputError(file, level_field(i, "oversubscription"),
                       fmt::format("must be at least 1, found {:g}", l.oversubscription),
                       "1 is a non-blocking fabric, 2 a 2:1 oversubscribed one");
  }
  const int64_t outer = c.level_span(c.levels.size() - 1);
  if (outer != c.world())
    throw InputError(
        file, "levels",
        fmt::format("the outermost level \"{}\" spans {} devices, not all {} ({} nodes x {})",
                    c.levels.back().name, outer, c.world(), c.nodes, c.devices_per_node),
        fmt::format("to join more nodes add a scale-out level (kind infiniband or roce, "
                    "span_devices 0 = the whole cluster); as described, at most {} node(s)",
                    std::max<int64_t>(1, outer / c.devices_per_node)));
}

size_t level_joining(const Cluster& c, int64_t device_a, int64_t device_b) {
  assert(device_a >= 0 && device_a < c.world() && device_b >= 0 && device_b < c.world());
  for (size_t i = 0; i < c.levels.size(); ++i) {
    const int64_t span = c.level_span(i);
    if (device_a / span == device_b / span) return i;
  }
  assert(false && "the outermost level spans every device (validate_cluster)");
  return c.levels.size() - 1;
}

}  // namespace shardplan
