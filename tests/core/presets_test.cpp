#include "core/presets.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_reader.h"
#include "tests/core/thrown_input_error.h"

using namespace shardplan;
using nlohmann::json;
using shardplan::testing::thrown_input_error;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTopologies{"aws-p5-h100", "dgx-a100",  "dgx-a100-40gb",
                                           "dgx-b200",    "dgx-h100",  "gb200-nvl72",
                                           "hgx-h200",    "local-cpu", "pcie-8gpu"};

std::string topology_file(const std::string& name) {
  return std::string(SHARDPLAN_SOURCE_DIR) + "/topologies/" + name + ".json";
}

// Every number in every object of a preset names its source: the object's "source" is a map from
// the figure's key to the datasheet, paper or measurement it comes from.
void check_sources(const json& j, const std::string& path) {
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) check_sources(j[i], path + "[" + std::to_string(i) + "]");
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    if (key == "source") continue;
    const std::string field = path.empty() ? key : path + "." + key;
    if (value.is_number()) {
      INFO(field);
      REQUIRE(j.contains("source"));
      REQUIRE(j["source"].is_object());
      CHECK(j["source"].contains(key));
      if (j["source"].contains(key)) CHECK(j["source"][key].get<std::string>().size() > 20);
    }
    check_sources(value, field);
  }
}

// Sets an environment variable for the life of a scope, then puts back what was there.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { old ? setenv(name.c_str(), old->c_str(), 1) : unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("every topology preset loads, round-trips and cites its figures", "[presets]") {
  CHECK(preset_names("topologies") == kTopologies);
  for (const auto& name : kTopologies) {
    INFO(name);
    const Cluster c = load_cluster(name);
    CHECK(c.name == name);
    CHECK(c.nodes == 1);
    CHECK(cluster_from_json(cluster_to_json(c), "round-trip") == c);
    check_sources(read_json_file(topology_file(name)), "");
  }
}

TEST_CASE("preset figures are the vendors' per-direction, dense ones", "[presets]") {
  const Cluster h100 = load_cluster("dgx-h100");
  CHECK(h100.levels[0].bandwidth_GBps == 450);  // NVLink4: 900 GB/s both directions
  CHECK(h100.levels[1].nics_per_node == 8);
  CHECK(h100.levels[1].nic_GBps == 50);                               // NDR: 400 Gb/s
  CHECK(h100.device.peak_tflops(Dtype::bf16) == Approx(1979.0 / 2));  // dense = sparse / 2
  const Cluster a100 = load_cluster("dgx-a100");
  CHECK(a100.levels[0].bandwidth_GBps == 300);  // NVLink3: 600 GB/s both directions
  CHECK(a100.levels[1].nic_GBps == 25);         // HDR: 200 Gb/s
  const Cluster pcie = load_cluster("pcie-8gpu");
  for (const auto& l : pcie.levels) CHECK(l.kind != LinkKind::nvlink);
}

TEST_CASE("nodes option scales a preset", "[presets]") {
  CHECK(load_cluster("dgx-h100", 4).world() == 32);
  CHECK(load_cluster("pcie-8gpu", 3).world() == 24);

  SECTION("two NVL72 racks") {
    const Cluster c = load_cluster("gb200-nvl72", 36);
    REQUIRE(c.world() == 144);
    CHECK(c.levels[level_joining(c, 0, 71)].name == "nvl72");
    CHECK(c.levels[level_joining(c, 0, 72)].name == "infiniband");
    CHECK(c.levels[level_joining(c, 72, 143)].name == "nvl72");
  }
  SECTION("part of a rack, and a rack and a half") {
    const Cluster part = load_cluster("gb200-nvl72", 4);
    CHECK(part.levels[level_joining(part, 0, 15)].name == "nvl72");
    const InputError e = thrown_input_error([&] { load_cluster("gb200-nvl72", 27); });
    CHECK(e.file == topology_file("gb200-nvl72"));
    CHECK(e.field == "levels[0].span_devices");
  }
  SECTION("this machine has no network") {
    const InputError e = thrown_input_error([&] { load_cluster("local-cpu", 4); });
    CHECK(e.file == topology_file("local-cpu"));
    CHECK(e.field == "levels");
    CHECK_FALSE(e.hint.empty());
  }
}

TEST_CASE("unknown preset names suggest the closest", "[presets]") {
  const InputError e = thrown_input_error([&] { load_cluster("dgx-h10"); });
  CHECK(e.file == "dgx-h10");
  CHECK(e.hint.find("did you mean dgx-h100") != std::string::npos);
  CHECK(e.hint.find("local-cpu") != std::string::npos);  // the available ones are listed
  CHECK(closest_names("h100", kTopologies) == std::vector<std::string>{"dgx-h100", "aws-p5-h100"});
  CHECK(closest_names("dgx-a10", kTopologies) ==
        std::vector<std::string>{"dgx-a100", "dgx-h100", "dgx-a100-40gb"});
  CHECK(closest_names("tpu-v5p", kTopologies).empty());
}

TEST_CASE("clusters load from a path and from SHARDPLAN_DATA_DIR", "[presets]") {
  const Cluster by_path = load_cluster(topology_file("dgx-a100"));
  CHECK(by_path == load_cluster("dgx-a100"));

  const fs::path dir = fs::temp_directory_path() / "shardplan_presets_test";
  fs::create_directories(dir / "topologies");
  json mini = cluster_to_json(load_cluster("dgx-h100"));
  mini["name"] = "mini";
  write_json_file((dir / "topologies" / "mini.json").string(), mini);
  const std::string before = data_dir();
  {
    const ScopedEnv env("SHARDPLAN_DATA_DIR", dir.string());
    CHECK(data_dir() == dir.string());
    CHECK(preset_names("topologies") == std::vector<std::string>{"mini"});
    CHECK(load_cluster("mini", 2).world() == 16);
  }
  CHECK(data_dir() == before);
  fs::remove_all(dir);
}

// load_model hands the file to model_from_json (core/model.cpp); only the lookup is tested here.
TEST_CASE("load_model finds a Hugging Face folder and rejects unknown names", "[presets]") {
  const fs::path dir = fs::temp_directory_path() / "shardplan_presets_model";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "llama", "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128,
    "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 128})";
  CHECK(load_model(dir.string()).hidden == 64);
  fs::remove_all(dir);
  const InputError e = thrown_input_error([&] { load_model("no-such-model-anywhere"); });
  CHECK(e.file == "no-such-model-anywhere");
  CHECK_FALSE(e.hint.empty());
}
