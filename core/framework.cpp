#include "core/framework.h"

#include <array>
#include <string_view>

#include "core/json_reader.h"
#include "core/presets.h"

namespace shardplan {

namespace {

// The fields a framework describes; `source` must name where each comes from.
constexpr auto kSourcedKeys = std::to_array<std::string_view>({"attention",
                                                               "dropout",
                                                               "fused_bias",
                                                               "host_us_per_kernel",
                                                               "cross_entropy",
                                                               "overlap_grad_reduce",
                                                               "overlap_param_gather",
                                                               "tp_comm_overlap",
                                                               "fp8_weight_cache",
                                                               "fused_swiglu",
                                                               "grad_bucket_copy",
                                                               "sp_gather_buffers",
                                                               "caching_allocator",
                                                               "expandable_segments",
                                                               "layer_split",
                                                               "mha_kv_copied",
                                                               "param_grads_held",
                                                               "param_grads_kept",
                                                               "step_grad_copy",
                                                               "param_gather_copy",
                                                               "reduce_bucket_elements",
                                                               "grad_bucket_elements",
                                                               "zero1_whole_all_reduce",
                                                               "grad_accumulation"});

// A measured or published figure per field, as the topologies give one: a field without one is
// an error, and so is a source for a field that does not exist.
void check_sources(ObjectReader& top) {
  ObjectReader source = top.object("source");
  for (std::string_view key : kSourcedKeys)
    if (source.string(key).empty()) source.fail(key, "is empty", "say where the value comes from");
  source.reject_unknown();
}

}  // namespace

Framework framework_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file);
  Framework f;
  f.name = r.string("name");
  r.ignore({"description"});
  f.attention = enum_field(r, "attention", kAttentionKernelNames);
  f.dropout = r.boolean("dropout");
  f.fused_bias = r.boolean("fused_bias");
  f.host_us_per_kernel = r.number("host_us_per_kernel");
  if (f.host_us_per_kernel < 0 || f.host_us_per_kernel > 1000)
    r.fail("host_us_per_kernel", "must be between 0 and 1000 microseconds");
  f.cross_entropy = enum_field(r, "cross_entropy", kCrossEntropyKernelNames);
  f.overlap_grad_reduce = r.boolean("overlap_grad_reduce");
  f.overlap_param_gather = r.boolean("overlap_param_gather");
  f.tp_comm_overlap = r.boolean("tp_comm_overlap");
  f.fp8_weight_cache = r.boolean("fp8_weight_cache");
  f.fused_swiglu = r.boolean("fused_swiglu");
  f.grad_bucket_copy = r.boolean("grad_bucket_copy");
  f.caching_allocator = r.boolean("caching_allocator");
  f.expandable_segments = r.boolean("expandable_segments");
  if (f.expandable_segments && !f.caching_allocator)
    r.fail("expandable_segments", "is a setting of PyTorch's caching allocator",
           "set caching_allocator to true, or expandable_segments to false");
  f.layer_split = enum_field(r, "layer_split", kLayerSplitNames);
  f.mha_kv_copied = r.boolean("mha_kv_copied");
  f.param_grads_held = r.boolean("param_grads_held");
  f.param_grads_kept = r.boolean("param_grads_kept");
  if (f.param_grads_kept && !f.param_grads_held)
    r.fail("param_grads_kept", "keeps the gradients param_grads_held holds",
           "set param_grads_held to true, or param_grads_kept to false");
  f.step_grad_copy = r.boolean("step_grad_copy");
  f.param_gather_copy = r.boolean("param_gather_copy");
  f.reduce_bucket_elements = r.integer("reduce_bucket_elements");
  if (f.reduce_bucket_elements < 0 || f.reduce_bucket_elements > int64_t{1} << 40)
    r.fail("reduce_bucket_elements", "must be between 0 and 2^40");
  f.grad_bucket_elements = r.integer("grad_bucket_elements");
  if (f.grad_bucket_elements < 0 || f.grad_bucket_elements > int64_t{1} << 40)
    r.fail("grad_bucket_elements", "must be between 0 and 2^40");
  f.zero1_whole_all_reduce = r.boolean("zero1_whole_all_reduce");
  f.grad_accumulation = enum_field(r, "grad_accumulation", kGradAccumulationNames);
  const int64_t sp_gather_buffers = r.integer("sp_gather_buffers");
  if (sp_gather_buffers < 0 || sp_gather_buffers > 16)
    r.fail("sp_gather_buffers", "must be between 0 and 16");
  f.sp_gather_buffers = static_cast<int>(sp_gather_buffers);
  check_sources(r);
  r.reject_unknown();
  return f;
}

Training run_by(Training t, const Framework& f) {
  t.overlap_grad_reduce = f.overlap_grad_reduce;
  t.overlap_param_gather = f.overlap_param_gather;
  t.tp_comm_overlap = f.tp_comm_overlap;
  t.grad_bucket_elements = f.grad_bucket_elements;
  t.zero1_whole_all_reduce = f.zero1_whole_all_reduce;
  t.layer_split = f.layer_split;
  return t;
}

Framework load_framework(const std::string& name_or_path) {
  const std::string file = resolve_preset(name_or_path, "frameworks", "framework");
  return framework_from_json(read_json_file(file), file);
}

}  // namespace shardplan
