// The training description: what one step is (batch, sequence, precision, optimizer) and what the
// whole run is (tokens to train, price), for time and cost.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/dtype.h"
#include "core/enum_names.h"

namespace shardplan {

enum class Optimizer { adam, sgd };

// How the framework splits the decoder layers over the pipeline stages. layout: as the layout says
// (Megatron-LM's and torchtitan's flags; evenly when it says nothing); cost_balanced: the framework
// decides by the blocks' costs (nanotron's build_model, core/stage_split.h: cost_balanced_split).
enum class LayerSplit { layout, cost_balanced };
inline constexpr EnumNames<LayerSplit, 2> kLayerSplitNames{
    {{LayerSplit::layout, "layout"}, {LayerSplit::cost_balanced, "cost_balanced"}}};
inline constexpr EnumNames<Optimizer, 2> kOptimizerNames{
    {{Optimizer::adam, "adam"}, {Optimizer::sgd, "sgd"}}};

struct Training {
  int64_t global_batch = 0;   // sequences per optimizer step
  int64_t seq_len = 0;        // tokens per sequence
  Dtype dtype = Dtype::bf16;  // weights and activations in compute
  Dtype grad_dtype = Dtype::bf16;
  // The linear layers' GEMMs in FP8 (core/dtype.h); their weights, gradients and the rest of the
  // layer stay in `dtype`.
  Fp8Recipe fp8 = Fp8Recipe::none;
  bool master_weights = true;  // fp32 master copy kept by the optimizer (mixed precision)
  Optimizer optimizer = Optimizer::adam;
  // The data-parallel reduction of accumulated gradients overlaps the backward (core/framework.h,
  // Framework::overlap_grad_reduce); false: it runs after the whole backward, on the compute
  // stream.
  bool overlap_grad_reduce = true;
  // ZeRO-1/2's gather of the parameters the previous step updated overlaps the forward, bucket by
  // bucket (core/framework.h, Framework::overlap_param_gather); false: it runs at the step's
  // start on the compute stream, before the first forward.
  bool overlap_param_gather = true;
  // The sequence-parallel all-gathers and reduce-scatters run in chunks beside their GEMMs
  // (core/framework.h, Framework::tp_comm_overlap; simulator/tp_comm_overlap.h).
  bool tp_comm_overlap = false;
  // Gradient elements at which a data-parallel reduction bucket closes (Framework::
  // grad_bucket_elements); 0: Megatron-LM's size, max(4·10⁷, 10⁶·dp·cp) (core/schedule.h:
  // grad_bucket_params).
  int64_t grad_bucket_elements = 0;
  // ZeRO-1 with fp32 gradients reduces them with one all-reduce of the whole buffer once the
  // backward is done, every rank keeping all of them (Framework::zero1_whole_all_reduce; core/
  // schedule.h: zero1_reduced_whole); false: bucket by bucket as ZeRO-0, each a reduce-scatter.
  bool zero1_whole_all_reduce = false;
  // Who splits the layers over the pipeline stages (core/framework.h, Framework::layer_split): a
  // plan keeps it, so that its layout is checked against the split that framework runs.
  LayerSplit layer_split = LayerSplit::layout;
  double tokens_to_train = 0;        // whole run, for time and cost (0: not asked)
  double price_per_device_hour = 0;  // in the user's currency (0: not asked)

  int64_t tokens_per_step() const { return global_batch * seq_len; }
};

// The training computing in `d`: the dtype, and for fp32 fp32 gradients and no master copy (there
// is no lower precision to keep one for), as a plain fp32 run of Megatron-LM or PyTorch keeps them;
// 16-bit gradients become `d`'s (fp16 runs keep fp16 gradients), fp32 ones stay.
// What --dtype means on the command line.
Training with_compute_dtype(Training t, Dtype d);

// Keys: global_batch, seq_len, dtype, grad_dtype, fp8, master_weights, optimizer,
// overlap_grad_reduce, overlap_param_gather, tp_comm_overlap, grad_bucket_elements,
// zero1_whole_all_reduce, layer_split, tokens_to_train, price_per_device_hour. Unknown keys
// rejected; validated (seq_len <= model max is checked with the model by validate_training).
Training training_from_json(const nlohmann::json& j, const std::string& file);
nlohmann::json training_to_json(const Training& t);
void validate_training(const Training& t, const std::string& file);
// FP8 linears (Training::fp8) run inside 16-bit training: an InputError naming `file` and `field`
// otherwise. validate_training checks it; so does pricing, for a dtype or recipe set after.
void check_fp8_dtype(const Training& t, const std::string& file, const std::string& field);

}  // namespace shardplan
