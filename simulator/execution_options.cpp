#include "simulator/execution_options.h"

namespace shardplan {

ExecutionOptions execution_options(const Framework& f) {
  ExecutionOptions x;
  x.framework = f.name;
  x.attention = f.attention;
  x.dropout = f.dropout;
  x.fused_bias = f.fused_bias;
  x.host_s_per_kernel = f.host_us_per_kernel * 1e-6;
  x.cross_entropy = f.cross_entropy;
  x.fused_swiglu = f.fused_swiglu;
  x.fp8_weight_cache = f.fp8_weight_cache;
  x.grad_bucket_copy = f.grad_bucket_copy;
  x.sp_gather_buffers = f.sp_gather_buffers;
  x.mha_kv_copied = f.mha_kv_copied;
  x.param_grads_held = f.param_grads_held;
  x.param_grads_kept = f.param_grads_kept;
  x.step_grad_copy = f.step_grad_copy;
  x.param_gather_copy = f.param_gather_copy;
  x.reduce_bucket_elements = f.reduce_bucket_elements;
  x.grad_accumulation = f.grad_accumulation;
  x.caching_allocator = f.caching_allocator;
  x.expandable_segments = f.expandable_segments;
  return x;
}

bool is_flash(AttentionKernel k) {
  return k != AttentionKernel::unfused;
}

}  // namespace shardplan
