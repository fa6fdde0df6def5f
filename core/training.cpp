#include "core/training.h"

#include <fmt/format.h>

#include <cmath>

#include "core/json_reader.h"

namespace shardplan {

// Defaults are mixed-precision training as Megatron-LM and DeepSpeed run it: bf16 weights,
// activations and gradients, fp32 master weights, Adam.
Training training_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file);
  Training t;
  t.global_batch = r.integer("global_batch");
  t.seq_len = r.integer("seq_len");
  t.dtype = enum_field_or(r, "dtype", Dtype::bf16, kDtypeNames);
  t.grad_dtype = enum_field_or(r, "grad_dtype", Dtype::bf16, kDtypeNames);
  t.fp8 = enum_field_or(r, "fp8", Fp8Recipe::none, kFp8RecipeNames);
  t.master_weights = r.boolean_or("master_weights", true);
  t.optimizer = enum_field_or(r, "optimizer", Optimizer::adam, kOptimizerNames);
  t.overlap_grad_reduce = r.boolean_or("overlap_grad_reduce", true);
  t.overlap_param_gather = r.boolean_or("overlap_param_gather", true);
  t.tp_comm_overlap = r.boolean_or("tp_comm_overlap", false);
  t.grad_bucket_elements = r.integer_or("grad_bucket_elements", 0);
  t.zero1_whole_all_reduce = r.boolean_or("zero1_whole_all_reduce", false);
  t.layer_split = enum_field_or(r, "layer_split", LayerSplit::layout, kLayerSplitNames);
  t.tokens_to_train = r.number_or("tokens_to_train", 0);
  t.price_per_device_hour = r.number_or("price_per_device_hour", 0);
  r.ignore({"source"});
  r.reject_unknown();
  validate_training(t, file);
  return t;
}

nlohmann::json training_to_json(const Training& t) {
  return {{"global_batch", t.global_batch},
          {"seq_len", t.seq_len},
          {"dtype", enum_name(t.dtype, kDtypeNames)},
          {"grad_dtype", enum_name(t.grad_dtype, kDtypeNames)},
          {"fp8", enum_name(t.fp8, kFp8RecipeNames)},
          {"master_weights", t.master_weights},
          {"optimizer", enum_name(t.optimizer, kOptimizerNames)},
          {"overlap_grad_reduce", t.overlap_grad_reduce},
          {"overlap_param_gather", t.overlap_param_gather},
          {"tp_comm_overlap", t.tp_comm_overlap},
          {"grad_bucket_elements", t.grad_bucket_elements},
          {"zero1_whole_all_reduce", t.zero1_whole_all_reduce},
          {"layer_split", enum_name(t.layer_split, kLayerSplitNames)},
          {"tokens_to_train", t.tokens_to_train},
          {"price_per_device_hour", t.price_per_device_hour}};
}

// Any dtype goes with or without master weights: fp32 with an fp32 master copy only duplicates
// the weights, and bf16/fp16 without one is pure low-precision training; both are allowed.
void validate_training(const Training& t, const std::string& file) {
  if (t.global_batch <= 0)
    throw InputError(file, "global_batch",
                     fmt::format("must be positive, found {}", t.global_batch));
  if (t.seq_len <= 0)
    throw InputError(file, "seq_len", fmt::format("must be positive, found {}", t.seq_len));
  // Far past any published run (Llama 3 405B: 2,048 sequences of 8,192 tokens): the bounds keep
  // every count of micro-batches and tokens well inside the integers the planner divides by.
  constexpr int64_t kMaxGlobalBatch = int64_t{1} << 20, kMaxSeqLen = int64_t{1} << 24;
  constexpr int64_t kMaxBucketElements = int64_t{1} << 40;
  if (t.global_batch > kMaxGlobalBatch)
    throw InputError(file, "global_batch",
                     fmt::format("{} sequences is above the {} shardplan plans for",
                                 t.global_batch, kMaxGlobalBatch));
  if (t.seq_len > kMaxSeqLen)
    throw InputError(file, "seq_len",
                     fmt::format("{} tokens is above the {} shardplan plans for", t.seq_len,
                                 kMaxSeqLen));
  if (t.grad_bucket_elements < 0 || t.grad_bucket_elements > kMaxBucketElements)
    throw InputError(file, "grad_bucket_elements",
                     fmt::format("must be between 0 (Megatron-LM's size) and {}, found {}",
                                 kMaxBucketElements, t.grad_bucket_elements));
  check_fp8_dtype(t, file, "fp8");
  if (!(std::isfinite(t.tokens_to_train) && t.tokens_to_train >= 0))
    throw InputError(file, "tokens_to_train",
                     fmt::format("must be a finite number >= 0, found {}", t.tokens_to_train));
  if (!(std::isfinite(t.price_per_device_hour) && t.price_per_device_hour >= 0))
    throw InputError(
        file, "price_per_device_hour",
        fmt::format("must be a finite number >= 0, found {}", t.price_per_device_hour));
}

void check_fp8_dtype(const Training& t, const std::string& file, const std::string& field) {
  if (t.fp8 == Fp8Recipe::none || dtype_bytes(t.dtype) == 2) return;
  throw InputError(file, field,
                   fmt::format("{} runs the linear layers in FP8 inside 16-bit training, and "
                               "dtype is {}",
                               enum_name(t.fp8, kFp8RecipeNames), enum_name(t.dtype, kDtypeNames)),
                   "set dtype to bf16, or fp8 to none");
}

Training with_compute_dtype(Training t, Dtype d) {
  t.dtype = d;
  if (d == Dtype::fp32) {
    t.grad_dtype = Dtype::fp32;
    t.master_weights = false;
  } else if (dtype_bytes(t.grad_dtype) == dtype_bytes(d)) {
    // 16-bit gradients are those of the compute dtype: fp16 runs keep fp16 gradients.
    t.grad_dtype = d;
  }
  return t;
}

}  // namespace shardplan
