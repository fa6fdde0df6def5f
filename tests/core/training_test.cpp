// The training description: defaults, strict keys, dtype names and validation.
#include "core/training.h"

#include <catch2/catch.hpp>

#include "tests/core/layout_fixtures.h"
#include "tests/core/thrown_input_error.h"

namespace shardplan {
namespace {

using Catch::Matchers::Contains;
using testing::thrown_input_error;

TEST_CASE("training JSON: defaults are bf16 mixed precision with Adam", "[training]") {
  const Training t = training_from_json({{"global_batch", 1536}, {"seq_len", 4096}}, "train.json");
  CHECK(t.global_batch == 1536);
  CHECK(t.seq_len == 4096);
  CHECK(t.dtype == Dtype::bf16);
  CHECK(t.grad_dtype == Dtype::bf16);
  CHECK(t.fp8 == Fp8Recipe::none);
  CHECK(t.master_weights);
  CHECK(t.optimizer == Optimizer::adam);
  CHECK(t.layer_split == LayerSplit::layout);
  CHECK(t.tokens_to_train == 0);
  CHECK(t.price_per_device_hour == 0);
  CHECK(t.tokens_per_step() == 6291456);  // 1536 × 4096
}

TEST_CASE("training JSON: every key, and back", "[training]") {
  const nlohmann::json j = {{"global_batch", 512},
                            {"seq_len", 2048},
                            {"dtype", "fp16"},
                            {"grad_dtype", "fp32"},
                            {"fp8", "current"},
                            {"master_weights", false},
                            {"optimizer", "sgd"},
                            {"overlap_grad_reduce", false},
                            {"overlap_param_gather", false},
                            {"tp_comm_overlap", true},
                            {"grad_bucket_elements", 13107200},
                            {"zero1_whole_all_reduce", true},
                            {"layer_split", "cost_balanced"},
                            {"tokens_to_train", 3e11},
                            {"price_per_device_hour", 2.5},
                            {"source", "GPT-3 2.7B recipe, Brown et al. 2020 Table 2.1"}};
  const Training t = training_from_json(j, "train.json");
  CHECK(t.dtype == Dtype::fp16);
  CHECK(t.grad_dtype == Dtype::fp32);
  CHECK(t.fp8 == Fp8Recipe::current);
  CHECK_FALSE(t.master_weights);
  CHECK(t.optimizer == Optimizer::sgd);
  CHECK_FALSE(t.overlap_grad_reduce);
  CHECK_FALSE(t.overlap_param_gather);
  CHECK(t.tp_comm_overlap);
  CHECK(t.grad_bucket_elements == 13107200);
  CHECK(t.zero1_whole_all_reduce);
  CHECK(t.layer_split == LayerSplit::cost_balanced);
  CHECK(t.tokens_to_train == 3e11);
  CHECK(t.price_per_device_hour == 2.5);
  nlohmann::json without_source = j;
  without_source.erase("source");
  CHECK(training_to_json(t) == without_source);
}

TEST_CASE("training JSON: fp32 with master weights and bf16 without are both allowed",
          "[training]") {
  CHECK(training_from_json({{"global_batch", 8},
                            {"seq_len", 1024},
                            {"dtype", "fp32"},
                            {"grad_dtype", "fp32"},
                            {"master_weights", true}},
                           "train.json")
            .master_weights);
  CHECK_FALSE(training_from_json(
                  {{"global_batch", 8}, {"seq_len", 1024}, {"master_weights", false}}, "train.json")
                  .master_weights);
}

TEST_CASE("training JSON: errors name the file and the field", "[training]") {
  const nlohmann::json ok = {{"global_batch", 8}, {"seq_len", 1024}};
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = ok;
    j[key] = std::move(v);
    return thrown_input_error([&] { training_from_json(j, "train.json"); });
  };
  const InputError dtype = with("dtype", "int8");
  CHECK(dtype.file == "train.json");
  CHECK(dtype.field == "dtype");
  CHECK_THAT(dtype.reason, Contains("\"int8\""));
  CHECK(dtype.hint == "one of: fp32 | tf32 | bf16 | fp16");
  CHECK(with("optimizer", "lion").hint == "one of: adam | sgd");
  CHECK(with("batch", 8).field == "batch");
  CHECK(std::string(with("global_batch", 0).what()) ==
        "train.json: global_batch: must be positive, found 0");
  CHECK(with("seq_len", -4).field == "seq_len");
  CHECK(with("seq_len", "4k").field == "seq_len");
  CHECK(with("tokens_to_train", -1).field == "tokens_to_train");
  CHECK(with("price_per_device_hour", -0.5).field == "price_per_device_hour");
  CHECK(with("grad_bucket_elements", -1).field == "grad_bucket_elements");
  CHECK(with("fp8", "nvfp4").hint == "one of: none | delayed | current | mxfp8");
  nlohmann::json fp32_fp8 = ok;
  fp32_fp8["dtype"] = "fp32";
  fp32_fp8["fp8"] = "delayed";
  const InputError fp8 = thrown_input_error([&] { training_from_json(fp32_fp8, "train.json"); });
  CHECK(fp8.field == "fp8");
  CHECK_THAT(fp8.reason, Contains("16-bit training, and dtype is fp32"));
  CHECK(thrown_input_error([] {
          training_from_json({{"seq_len", 1024}}, "train.json");
        }).field == "global_batch");
}

TEST_CASE("validate_training: a struct built in code", "[training]") {
  Training t = test::training(64, 0);
  CHECK_THAT(thrown_input_error([&] { validate_training(t, "--seq-len"); }).what(),
             Contains("seq_len: must be positive"));
  t.seq_len = 2048;
  validate_training(t, "--seq-len");
  // Bounded, so no count the planner divides by overflows or narrows.
  t.global_batch = (int64_t{1} << 20) + 1;
  CHECK_THAT(thrown_input_error([&] { validate_training(t, "--gbs"); }).what(),
             Contains("global_batch: 1048577 sequences is above the 1048576"));
  t.global_batch = 64;
  t.seq_len = (int64_t{1} << 24) + 1;
  CHECK_THAT(thrown_input_error([&] { validate_training(t, "--seq"); }).what(),
             Contains("seq_len: 16777217 tokens is above"));
}

TEST_CASE("training: --dtype fp32 means fp32 gradients and no master copy", "[training]") {
  Training t;  // bf16, bf16 gradients, fp32 master weights
  const Training fp32 = with_compute_dtype(t, Dtype::fp32);
  CHECK(fp32.dtype == Dtype::fp32);
  CHECK(fp32.grad_dtype == Dtype::fp32);
  CHECK_FALSE(fp32.master_weights);
  const Training fp16 = with_compute_dtype(t, Dtype::fp16);
  CHECK(fp16.dtype == Dtype::fp16);
  CHECK(fp16.grad_dtype == Dtype::fp16);  // 16-bit gradients follow the compute dtype
  CHECK(fp16.master_weights);
  Training fp32_grads = t;
  fp32_grads.grad_dtype = Dtype::fp32;  // fp32 accumulation is kept
  CHECK(with_compute_dtype(fp32_grads, Dtype::fp16).grad_dtype == Dtype::fp32);
}

}  // namespace
}  // namespace shardplan
