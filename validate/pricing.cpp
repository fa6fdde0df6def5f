#include "validate/pricing.h"

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "core/stage_split.h"
#include "core/threads.h"
#include "simulator/estimate.h"
#include "validate/sets.h"

namespace shardplan {

namespace {

PricedRow price_row(const FidelityRow& row, const ExecutionOptions& x) {
  PricedRow p;
  if (!row.refused.empty()) {
    p.refusal = row.refused;
    return p;
  }
  try {
    validate_model(row.model, row.id);
    const Layout layout = split_as_run(row.layout, row.model, row.training);
    validate_layout(layout, row.model, row.cluster, row.training, row.id);
    const Estimate e = estimate(row.model, row.cluster, row.training, layout, x);
    p.step_time_s = e.step_time_s;
    p.reserved_bytes = e.memory().reserved_bytes();
    p.first_stage_reserved_bytes = e.stages.front().reserved_bytes();
    p.runtime_reserved_bytes = e.memory().runtime_reserved_bytes;
    p.fits = e.fits;
  } catch (const InputError& err) {
    // Tallied by field: the reasons carry each row's numbers.
    p.refusal = "rejected by validation: " + (err.field.empty() ? err.reason : err.field);
    p.refusal_detail = err.what();
  }
  return p;
}

}  // namespace

std::vector<PricedRow> price_set(const FidelitySet& s, unsigned threads) {
  const ExecutionOptions x = set_execution(s.framework);
  std::vector<PricedRow> priced(s.rows.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  parallel_for(s.rows.size(), threads, [&](size_t i) { priced[i] = price_row(s.rows[i], x); });
  return priced;
}

}  // namespace shardplan
