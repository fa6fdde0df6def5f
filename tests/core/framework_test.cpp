#include "core/framework.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/presets.h"
#include "tests/core/thrown_input_error.h"

using namespace shardplan;
using nlohmann::json;
using shardplan::testing::thrown_input_error;

namespace {

json unfused_json() {
  return json::parse(R"({
    "name": "test", "attention": "unfused", "dropout": true, "fused_bias": false,
    "host_us_per_kernel": 8, "cross_entropy": "megatron", "overlap_grad_reduce": false,
    "overlap_param_gather": false, "tp_comm_overlap": true, "fp8_weight_cache": true,
    "fused_swiglu": false,
    "grad_bucket_copy": true,
    "sp_gather_buffers": 2,
    "caching_allocator": false, "expandable_segments": false, "layer_split": "cost_balanced",
    "mha_kv_copied": true, "param_grads_held": true, "param_grads_kept": true,
    "step_grad_copy": true, "param_gather_copy": true, "reduce_bucket_elements": 1000,
    "grad_bucket_elements": 2000, "zero1_whole_all_reduce": true,
    "grad_accumulation": "hook",
    "source": {"attention": "a", "dropout": "b", "fused_bias": "c", "host_us_per_kernel": "d",
               "cross_entropy": "f", "overlap_grad_reduce": "e", "overlap_param_gather": "l",
               "tp_comm_overlap": "w", "fp8_weight_cache": "x",
               "fused_swiglu": "g", "grad_bucket_copy": "h", "sp_gather_buffers": "i",
               "caching_allocator": "j", "expandable_segments": "k", "layer_split": "m",
               "mha_kv_copied": "n", "param_grads_held": "o", "param_grads_kept": "q",
               "step_grad_copy": "p", "param_gather_copy": "r", "reduce_bucket_elements": "s",
               "grad_bucket_elements": "t", "zero1_whole_all_reduce": "u",
               "grad_accumulation": "v"}})");
}

std::string error_field(const json& j) {
  const InputError e = thrown_input_error([&] { framework_from_json(j, "test.json"); });
  CHECK(e.file == "test.json");
  return e.field;
}

}  // namespace

TEST_CASE("framework JSON is read field by field", "[framework]") {
  const Framework f = framework_from_json(unfused_json(), "test.json");
  CHECK(f.name == "test");
  CHECK(f.attention == AttentionKernel::unfused);
  CHECK(f.dropout);
  CHECK_FALSE(f.fused_bias);
  CHECK(f.host_us_per_kernel == 8);
  CHECK(f.cross_entropy == CrossEntropyKernel::megatron);
  CHECK_FALSE(f.overlap_grad_reduce);
  CHECK(f.tp_comm_overlap);
  CHECK(f.fp8_weight_cache);
  CHECK_FALSE(f.fused_swiglu);
  CHECK(f.grad_bucket_copy);
  CHECK(f.sp_gather_buffers == 2);
  CHECK_FALSE(f.caching_allocator);
  CHECK_FALSE(f.expandable_segments);
  Training t;
  CHECK(t.overlap_grad_reduce);
  CHECK_FALSE(run_by(t, f).overlap_grad_reduce);
  CHECK(t.overlap_param_gather);
  CHECK_FALSE(run_by(t, f).overlap_param_gather);
  CHECK_FALSE(t.tp_comm_overlap);
  CHECK(run_by(t, f).tp_comm_overlap);
  CHECK(f.layer_split == LayerSplit::cost_balanced);
  CHECK(f.mha_kv_copied);
  CHECK(f.param_grads_held);
  CHECK(f.param_grads_kept);
  CHECK(f.step_grad_copy);
  CHECK(f.param_gather_copy);
  CHECK(f.reduce_bucket_elements == 1000);
  CHECK(run_by(t, f).grad_bucket_elements == 2000);
  CHECK(run_by(t, f).zero1_whole_all_reduce);
  CHECK(f.grad_accumulation == GradAccumulation::hook);
  CHECK(t.layer_split == LayerSplit::layout);
  CHECK(run_by(t, f).layer_split == LayerSplit::cost_balanced);
}

TEST_CASE("a framework field without a source, or with a bad value, names the field",
          "[framework]") {
  json j = unfused_json();
  j["source"].erase("dropout");
  CHECK(error_field(j) == "source.dropout");

  j = unfused_json();
  j["source"]["speed"] = "fast";
  CHECK(error_field(j) == "source.speed");

  j = unfused_json();
  j["attention"] = "flash9";
  CHECK(error_field(j) == "attention");

  j = unfused_json();
  j["host_us_per_kernel"] = -1;
  CHECK(error_field(j) == "host_us_per_kernel");

  j = unfused_json();
  j["cross_entropy"] = "liger";
  CHECK(error_field(j) == "cross_entropy");

  j = unfused_json();
  j["sp_gather_buffers"] = -1;
  CHECK(error_field(j) == "sp_gather_buffers");

  j = unfused_json();
  j.erase("overlap_grad_reduce");
  CHECK(error_field(j) == "overlap_grad_reduce");

  j = unfused_json();
  j["grad_accumulation"] = "lazy";
  CHECK(error_field(j) == "grad_accumulation");

  j = unfused_json();
  j["grad_bucket_elements"] = -1;
  CHECK(error_field(j) == "grad_bucket_elements");

  j = unfused_json();
  j["expandable_segments"] = true;  // without PyTorch's caching allocator
  CHECK(error_field(j) == "expandable_segments");

  j = unfused_json();
  j["param_grads_held"] = false;  // nothing held to keep
  CHECK(error_field(j) == "param_grads_kept");

  j = unfused_json();
  j["cuda_graphs"] = true;
  CHECK(error_field(j) == "cuda_graphs");
}

TEST_CASE("every framework preset loads, under its own name", "[framework]") {
  const auto names = preset_names("frameworks");
  REQUIRE(names.size() >= 5);
  for (const std::string& name : names) {
    INFO(name);
    CHECK(load_framework(name).name == name);
  }
  CHECK(load_framework(kDefaultFramework).attention == AttentionKernel::flash3);
  const InputError e = thrown_input_error([] { load_framework("megatron-cor"); });
  CHECK(e.hint.find("megatron-core") != std::string::npos);
}
