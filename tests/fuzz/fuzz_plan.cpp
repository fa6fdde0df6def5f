// A plan JSON, as `estimate PLAN` and `execute PLAN` read it (load_plan: plan_from_json, which
// validates the layout against the plan's model and cluster), then its JSON and compact layout as
// the reports write them.
#include "core/plan.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::refusal_is_fine([&] {
    const Plan p = plan_from_json(fuzz::parse_bytes(data, size, "plan.json"), "plan.json");
    to_string(p.layout);
    plan_to_json(p);
  });
}
