// Plan files: the four descriptions and the prediction, read back equal, validated as a whole with
// errors that name the plan file and the section.
#include "core/plan.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "core/json_reader.h"
#include "tests/core/layout_fixtures.h"
#include "tests/core/thrown_input_error.h"

namespace shardplan {
namespace {

using Catch::Matchers::Contains;
using testing::thrown_input_error;

Plan llama_plan() {
  Plan p;
  p.model = load_model("llama2-70b");
  p.cluster = test::dgx_h100(128);
  p.training = test::training(1536, 4096);
  p.layout = resolve_layout(parse_layout_string("tp=8,pp=4,zero=1,sp=1,vpp=2,recompute=selective"),
                            p.model, p.cluster, p.training, "--layout");
  p.prediction = {{"step_time_s", 12.5}, {"fits", true}};
  return p;
}

TEST_CASE("plan JSON: written and read back equal", "[plan]") {
  const Plan p = llama_plan();
  const nlohmann::json j = plan_to_json(p);
  CHECK(j["layout"] == layout_to_json(p.layout));
  CHECK(j["training"] == training_to_json(p.training));
  const Plan back = plan_from_json(j, "plan.json");
  CHECK(back.model == p.model);
  CHECK(back.layout == p.layout);
  CHECK(training_to_json(back.training) == training_to_json(p.training));
  CHECK(cluster_to_json(back.cluster) == cluster_to_json(p.cluster));
  CHECK(back.prediction == p.prediction);

  nlohmann::json no_prediction = j;
  no_prediction.erase("prediction");
  CHECK(plan_from_json(no_prediction, "plan.json").prediction == nlohmann::json::object());
}

TEST_CASE("plan JSON: the layout is validated against the model, cluster and training", "[plan]") {
  nlohmann::json j = plan_to_json(llama_plan());
  j["layout"]["tp"] = 16;
  j["layout"]["dp"] = 16;
  const InputError tp = thrown_input_error([&] { plan_from_json(j, "plan.json"); });
  CHECK(std::string(tp.what()) == "plan.json: layout.tp: 16 does not divide num_key_value_heads=8");

  j = plan_to_json(llama_plan());
  j["layout"]["dp"] = 64;
  const InputError world = thrown_input_error([&] { plan_from_json(j, "plan.json"); });
  CHECK(world.file == "plan.json");
  CHECK(world.field == "layout.dp");
  CHECK_THAT(world.reason, Contains("64 × 8 × 4 × 1 = 2048") && Contains("1024 devices"));

  j = plan_to_json(llama_plan());
  j["training"]["global_batch"] = 3072;
  const InputError batch = thrown_input_error([&] { plan_from_json(j, "plan.json"); });
  CHECK(batch.field == "layout.num_microbatches");
  CHECK_THAT(batch.reason, Contains("1 × 48 × 32 = 1536 does not equal the global batch 3072"));
}

TEST_CASE("plan JSON: section errors carry the section's name", "[plan]") {
  nlohmann::json j = plan_to_json(llama_plan());
  j["training"]["seq_len"] = 0;
  CHECK(std::string(thrown_input_error([&] { plan_from_json(j, "plan.json"); }).what()) ==
        "plan.json: training.seq_len: must be positive, found 0");

  j = plan_to_json(llama_plan());
  j["training"]["steps"] = 10;
  CHECK(thrown_input_error([&] { plan_from_json(j, "plan.json"); }).field == "training.steps");

  j = plan_to_json(llama_plan());
  j["model"] = 7;
  const InputError model = thrown_input_error([&] { plan_from_json(j, "plan.json"); });
  CHECK(model.file == "plan.json");
  CHECK(model.field.starts_with("model"));

  j = plan_to_json(llama_plan());
  j["layout"]["vpp"] = "two";
  CHECK(thrown_input_error([&] { plan_from_json(j, "plan.json"); }).field == "layout.vpp");

  j = plan_to_json(llama_plan());
  j["prediction"] = nlohmann::json::array();
  CHECK(thrown_input_error([&] { plan_from_json(j, "plan.json"); }).field == "prediction");

  j = plan_to_json(llama_plan());
  j["measured"] = nlohmann::json::object();
  CHECK(thrown_input_error([&] { plan_from_json(j, "plan.json"); }).field == "measured");
  j.erase("measured");
  j.erase("cluster");
  CHECK(thrown_input_error([&] { plan_from_json(j, "plan.json"); }).field == "cluster");
}

TEST_CASE("load_plan: reads a file, names it in errors", "[plan]") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shardplan_plan_test_" + std::to_string(::getpid()) + ".json"))
                               .string();
  nlohmann::json j = plan_to_json(llama_plan());
  write_json_file(path, j);
  CHECK(load_plan(path).layout == llama_plan().layout);
  j["layout"]["zero"] = 5;
  write_json_file(path, j);
  const InputError e = thrown_input_error([&] { load_plan(path); });
  CHECK(e.file == path);
  CHECK(e.field == "layout.zero");
  std::filesystem::remove(path);
  CHECK(thrown_input_error([&] { load_plan(path); }).reason == "cannot open file");
}

}  // namespace
}  // namespace shardplan
