#include "simulator/estimate.h"

#include <algorithm>

#include "simulator/allocator_replay.h"
#include "simulator/model_flops.h"
#include "simulator/pipeline_model.h"
#include "simulator/stage_timing.h"

namespace shardplan {

namespace {

// The worst rank's memory: every stage has the same capacity and reserve, so the one with the
// largest peak decides whether the layout fits.
void pick_worst_memory(Estimate& e, const Layout& l) {
  for (size_t i = 0; i < e.stages.size(); ++i)
    if (e.stages[i].reserved_bytes() > e.memory().reserved_bytes())
      e.worst_stage = static_cast<int>(i);
  e.worst_rank = StageTimer::stage_rank(l, e.worst_stage);
  e.fits = e.memory().fits();
  if (!e.fits) e.overflow = first_overflow(e.memory());
}

void fill_step_time(Estimate& e, const Layout& l, const StageTiming& slow,
                    const StageTimings& timings) {
  const StageTiming& extra = timings.most_step_work;
  const double pipeline_s = pipeline_time_s(l, e.stage_microbatch_s, timings.split());
  const double mb = l.num_microbatches;
  e.time.compute_s = mb * (slow.compute.forward.time_s() + slow.compute.backward.time_s() +
                           slow.compute.weight_grad.time_s());
  e.time.recompute_s = mb * slow.compute.recompute.time_s();
  e.time.microbatch_comm_s = mb * slow.microbatch_comm_s;
  e.time.interference_s = mb * slow.microbatch_interference_s + extra.step_interference_s;
  e.time.bubble_s = pipeline_s - mb * slow.microbatch_s();
  e.time.step_comm_s = extra.step_comm_s;
  e.time.optimizer_s = extra.optimizer_s;
  e.step_time_s = critical_path_s(l, timings);
  e.bubble_fraction = bubble_fraction(l, e.stage_microbatch_s, timings.split());
  for (const CollectiveEstimate& r : e.collectives) e.exposed_comm_s += r.exposed_s;
}

void fill_rates(Estimate& e, const Model& m, const Training& t, const Layout& l) {
  const int64_t global_batch = l.global_batch();
  e.model_flops_per_step = model_flops_per_step(m, global_batch, t.seq_len);
  e.hardware_flops_per_step =
      e.model_flops_per_step + recompute_flops_per_step(m, global_batch, t.seq_len, l.recompute);
  const double world = static_cast<double>(e.world);
  e.tokens_per_s = static_cast<double>(e.tokens_per_step) / e.step_time_s;
  e.tflops_per_device = e.model_flops_per_step / e.step_time_s / world / 1e12;
  e.mfu = e.model_flops_per_step / (e.step_time_s * world * e.peak_flops_per_device);
  e.hfu = e.hardware_flops_per_step / (e.step_time_s * world * e.peak_flops_per_device);
  if (t.tokens_to_train > 0) {
    e.train_time_s = t.tokens_to_train / e.tokens_per_s;
    e.train_cost = e.train_time_s / 3600 * world * t.price_per_device_hour;
  }
}

}  // namespace

Estimate estimate(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                  const ExecutionOptions& x, EstimateCache* cache) {
  const StageContext ctx = make_stage_context(m, c, t, l, x, cache);
  Estimate e;
  e.world = l.world();
  e.tokens_per_step = l.global_batch() * t.seq_len;
  // FP8 runs count MFU against the FP8 peak, as llm-foundry's FP8 table and NVIDIA's do.
  const bool fp8 = t.fp8 != Fp8Recipe::none;
  e.fp8 = t.fp8;
  e.peak_flops_per_device = (fp8 ? c.device.peak_tflops_fp8 : c.device.peak_tflops(t.dtype)) * 1e12;
  e.best_published_mfu = fp8 ? c.device.best_published_mfu_fp8 : c.device.best_published_mfu;
  e.options = x;

  StageStateCache* states = cache ? &cache->stage_states() : nullptr;
  e.stages = stage_memories(m, t, l, c.device, x, states);
  add_runtime_memory(e.stages, c, l, states);
  if (x.caching_allocator && (!cache || cache->replay_allocator))
    add_allocator_cache(e.stages, m, t, l, x);
  pick_worst_memory(e, l);
  StageTimer timer(ctx, cache, Priced::program);
  const StageTimings timings = timer.all_stages();
  e.stage_microbatch_s = timings.microbatch_s;
  const auto slowest = std::max_element(e.stage_microbatch_s.begin(), e.stage_microbatch_s.end());
  e.slowest_stage = static_cast<int>(slowest - e.stage_microbatch_s.begin());
  const StageTiming slow = timer(e.slowest_stage, &e.collectives);
  e.compute = slow.compute;
  e.optimizer_bytes = slow.optimizer_bytes;
  fill_step_time(e, l, slow, timings);
  fill_rates(e, m, t, l);
  return e;
}

}  // namespace shardplan
