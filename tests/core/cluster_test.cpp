#include "core/cluster.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "tests/core/thrown_input_error.h"

using namespace shardplan;
using nlohmann::json;
using shardplan::testing::thrown_input_error;

namespace {

// Two nodes of 8 devices on NVLink, joined by InfiniBand.
json two_node_json() {
  return json::parse(R"({
    "name": "test", "source": "hand-written", "nodes": 2, "devices_per_node": 8,
    "device": {"name": "gpu", "memory_GiB": 80, "reserved_GiB": 2, "memory_GBps": 3350,
               "peak_tflops": {"fp32": 67, "bf16": 989.5, "source": {"bf16": "datasheet"}},
               "efficiency": {"matmul": 0.8, "attention_forward": 0.75, "attention_backward": 0.56,
                              "memory": 0.9, "sm_count": 132}},
    "levels": [
      {"name": "nvlink", "kind": "nvlink", "span_devices": 8, "bandwidth_GBps": 450, "latency_us": 0.5},
      {"name": "ib", "kind": "infiniband", "nics_per_node": 8, "nic_GBps": 50, "latency_us": 2.7,
       "oversubscription": 2}
    ]})");
}

// The field named by the InputError that reading `j` throws.
std::string error_field(const json& j) {
  const InputError e = thrown_input_error([&] { cluster_from_json(j, "test.json"); });
  CHECK(e.file == "test.json");
  return e.field;
}

}  // namespace

TEST_CASE("cluster JSON is read with units and defaults", "[cluster]") {
  const Cluster c = cluster_from_json(two_node_json(), "test.json");
  CHECK(c.name == "test");
  CHECK(c.world() == 16);
  CHECK(c.device.memory_bytes() == 80LL << 30);
  CHECK(c.device.reserved_bytes() == 2LL << 30);
  CHECK(c.device.peak_tflops(Dtype::bf16) == 989.5);
  CHECK(c.device.peak_tflops(Dtype::fp32) == 67);
  CHECK(c.device.peak_tflops(Dtype::tf32) == 0);  // absent = not supported
  REQUIRE(c.levels.size() == 2);
  CHECK(c.levels[0].kind == LinkKind::nvlink);
  CHECK_FALSE(c.levels[0].is_scale_out());
  CHECK(c.levels[0].oversubscription == 1);  // default
  CHECK(c.levels[1].is_scale_out());
  CHECK(c.levels[1].nics_per_node == 8);
  CHECK(c.levels[1].nic_GBps == 50);
  CHECK(c.levels[1].oversubscription == 2);
  CHECK(c.level_span(0) == 8);
  CHECK(c.level_span(1) == 16);  // span 0 resolves to the whole cluster
}

TEST_CASE("cluster_to_json reads back to an equal cluster", "[cluster]") {
  const Cluster c = cluster_from_json(two_node_json(), "test.json");
  const json out = cluster_to_json(c);
  CHECK(cluster_from_json(out, "round-trip") == c);
  CHECK_FALSE(out["levels"][1].contains("bandwidth_GBps"));
  CHECK_FALSE(out["levels"][0].contains("nic_GBps"));
}

TEST_CASE("cluster errors name the file and the field", "[cluster]") {
  struct Case {
    const char* what;
    json::json_pointer where;
    json value;
    const char* field;
  };
  using P = json::json_pointer;
  const Case cases[] = {
      {"unknown key", P("/colour"), "red", "colour"},
      {"misspelt level key", P("/levels/0/bandwith_GBps"), 450, "levels[0].bandwith_GBps"},
      {"unknown peak dtype", P("/device/peak_tflops/fp4"), 4500, "device.peak_tflops.fp4"},
      {"FP8 peak without its efficiency", P("/device/peak_tflops/fp8"), 1979,
       "device.efficiency.matmul_fp8"},
      {"FP8 efficiency without its peak", P("/device/efficiency/matmul_fp8"), 0.6,
       "device.peak_tflops.fp8"},
      {"FP8 efficiency above the peak", P("/device/efficiency/matmul_fp8"), 1.2,
       "device.efficiency.matmul_fp8"},
      {"no devices", P("/devices_per_node"), 0, "devices_per_node"},
      {"no nodes", P("/nodes"), -1, "nodes"},
      {"fractional count", P("/devices_per_node"), 7.5, "devices_per_node"},
      {"no memory", P("/device/memory_GiB"), 0, "device.memory_GiB"},
      {"reserve above memory", P("/device/reserved_GiB"), 80, "device.reserved_GiB"},
      {"negative peak", P("/device/peak_tflops/bf16"), -1, "device.peak_tflops.bf16"},
      {"no memory bandwidth", P("/device/memory_GBps"), 0, "device.memory_GBps"},
      {"efficiency above the peak", P("/device/efficiency/matmul"), 1.2,
       "device.efficiency.matmul"},
      {"zero efficiency", P("/device/efficiency/memory"), 0, "device.efficiency.memory"},
      {"unknown efficiency key", P("/device/efficiency/gemm"), 0.8, "device.efficiency.gemm"},
      {"no sustained clock", P("/device/efficiency/sustained_clock"), 0,
       "device.efficiency.sustained_clock"},
      {"FlashAttention-2 above the peak", P("/device/efficiency/flash2_forward"), 1.5,
       "device.efficiency.flash2_forward"},
      {"negative kernel overhead", P("/device/efficiency/kernel_overhead_us"), -1,
       "device.efficiency.kernel_overhead_us"},
      {"published MFU of a whole peak", P("/device/best_published_mfu"), 1,
       "device.best_published_mfu"},
      {"no levels", P("/levels"), json::array(), "levels"},
      {"unknown link kind", P("/levels/0/kind"), "nvswitch", "levels[0].kind"},
      {"scale-up level with NICs", P("/levels/0/nics_per_node"), 8, "levels[0].nics_per_node"},
      {"scale-out level with per-device bandwidth", P("/levels/1/bandwidth_GBps"), 50,
       "levels[1].bandwidth_GBps"},
      {"no NIC bandwidth", P("/levels/1/nic_GBps"), 0, "levels[1].nic_GBps"},
      {"no NICs", P("/levels/1/nics_per_node"), 0, "levels[1].nics_per_node"},
      {"no NVLink bandwidth", P("/levels/0/bandwidth_GBps"), 0, "levels[0].bandwidth_GBps"},
      {"domain straddling nodes", P("/levels/0/span_devices"), 3, "levels[0].span_devices"},
      {"domain not a whole number of nodes", P("/levels/0/span_devices"), 12,
       "levels[0].span_devices"},
      {"spans not growing", P("/levels/1/span_devices"), 8, "levels[1].span_devices"},
      {"negative span", P("/levels/0/span_devices"), -8, "levels[0].span_devices"},
      {"whole cluster before the outermost", P("/levels/0/span_devices"), 0,
       "levels[0].span_devices"},
      {"negative latency", P("/levels/1/latency_us"), -1, "levels[1].latency_us"},
      {"oversubscription below 1", P("/levels/1/oversubscription"), 0.5,
       "levels[1].oversubscription"},
      {"two levels of one name", P("/levels/1/name"), "nvlink", "levels[1].name"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    json j = two_node_json();
    j[c.where] = c.value;
    CHECK(error_field(j) == c.field);
  }
  SECTION("a missing required field") {
    json j = two_node_json();
    j["levels"][1].erase("nic_GBps");
    CHECK(error_field(j) == "levels[1].nic_GBps");
    j = two_node_json();
    j["device"].erase("memory_GBps");
    CHECK(error_field(j) == "device.memory_GBps");
  }
  SECTION("no dtype with a peak") {
    json j = two_node_json();
    j["device"]["peak_tflops"] = {{"fp32", 0}};
    CHECK(error_field(j) == "device.peak_tflops");
  }
}

TEST_CASE("with_nodes scales the node description", "[cluster]") {
  const Cluster one = with_nodes(cluster_from_json(two_node_json(), "test.json"), 1, "test.json");
  CHECK(one.world() == 8);
  const Cluster many = with_nodes(one, 512, "test.json");
  CHECK(many.world() == 4096);
  CHECK(many.level_span(0) == 8);
  CHECK(many.level_span(1) == 4096);
  CHECK(level_joining(many, 0, 7) == 0);
  CHECK(level_joining(many, 7, 8) == 1);
  CHECK(level_joining(many, 4095, 0) == 1);

  SECTION("zero nodes") {
    const InputError e = thrown_input_error([&] { with_nodes(one, 0, "test.json"); });
    CHECK(e.file == "test.json");
    CHECK(e.field == "nodes");
  }
  SECTION("a single box without a network level cannot grow") {
    Cluster box = one;
    box.levels.pop_back();
    const InputError e = thrown_input_error([&] { with_nodes(box, 4, "box.json"); });
    CHECK(e.file == "box.json");
    CHECK(e.field == "levels");
    CHECK(e.reason.find("spans 8 devices, not all 32") != std::string::npos);
    CHECK(e.hint.find("scale-out level") != std::string::npos);
  }
}

TEST_CASE("a domain of several nodes tiles the cluster or holds all of it", "[cluster]") {
  // 4 devices per node, a 72-device NVLink domain (18 nodes).
  json j = two_node_json();
  j["devices_per_node"] = 4;
  j["nodes"] = 36;
  j["levels"][0]["span_devices"] = 72;
  j["levels"][1]["nics_per_node"] = 4;
  const Cluster c = cluster_from_json(j, "nvl.json");
  CHECK(c.world() == 144);
  CHECK(level_joining(c, 0, 71) == 0);
  CHECK(level_joining(c, 71, 72) == 1);

  const Cluster part = with_nodes(c, 4, "nvl.json");  // 16 devices of one domain
  CHECK(part.level_span(0) == 16);
  CHECK(level_joining(part, 0, 15) == 0);
  const InputError e = thrown_input_error([&] { with_nodes(c, 27, "nvl.json"); });  // 1.5 domains
  CHECK(e.field == "levels[0].span_devices");
  CHECK(e.hint.find("multiple of 18") != std::string::npos);
}
