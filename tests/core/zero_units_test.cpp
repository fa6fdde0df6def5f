// ZeRO's units (core/zero_units.h) by hand: Megatron-LM's buckets filled in backward order, FSDP's
// units with the tied word embedding apart, and each unit's shard padded on its own.
#include "core/zero_units.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/presets.h"
#include "tests/core/odd_model.h"

namespace shardplan {
namespace {

TEST_CASE("gradient buckets: backward order, closed at the threshold, empty units in none",
          "[zero]") {
  const std::vector<int64_t> params{5, 0, 30, 30, 10};
  // 10 + 30 = 40 closes units 3-4; 30 + 0 + 5 is left for the last bucket, units 0-2.
  CHECK(gradient_buckets(params, 40) == std::vector<UnitSpan>{{3, 4, 40}, {0, 2, 35}});
  // A threshold of 1: every unit with parameters alone (ZeRO-3).
  CHECK(gradient_buckets(params, 1) ==
        std::vector<UnitSpan>{{4, 4, 10}, {3, 3, 30}, {2, 2, 30}, {0, 0, 5}});
}

TEST_CASE("ZeRO units of gpt-tiny: one bucket, FSDP's units, stages", "[zero]") {
  const Model m = load_model(std::string(SHARDPLAN_SOURCE_DIR) + "/models/gpt-tiny.json");
  // h = 64, ffn = 256: a layer holds 4h² + 4h (attention) + 2h·ffn + ffn + h (MLP) + 4h (norms)
  // = 49,984; wte 256·64 = 16,384, wpe 64·64 = 4,096, the final norm 128.
  Layout l;
  l.dp = 2;
  l.zero = 1;
  CHECK(zero_unit_params(m, l, 0) == std::vector<int64_t>{220'544});  // under 40M: one bucket
  l.zero = 3;  // tied, pp = 1: the head gathers wte alone, so it is a unit of its own
  CHECK(zero_unit_params(m, l, 0) ==
        std::vector<int64_t>{128, 49'984, 49'984, 49'984, 49'984, 16'384, 4'096});
  l.pp = 2;  // the last stage's head holds an lm_head copy (16,384) with the final norm
  CHECK(zero_unit_params(m, l, 0) == std::vector<int64_t>{49'984, 49'984, 20'480});
  CHECK(zero_unit_params(m, l, 1) == std::vector<int64_t>{16'512, 49'984, 49'984});
}

TEST_CASE("ZeRO shards pad each unit on its own", "[zero]") {
  // odd_model: h = 63, ffn = 126, 3 layers of 4h² + 9h + 2h·ffn + ffn = 32,445 parameters; wte
  // 16,128, wpe 4,032, final norm 126: 117,621 in all. Over 2 ranks each odd layer pads one:
  // 8,064 + 2,016 + 3 · 16,223 + 63 = 58,812, where one shard of the whole would hold 58,811.
  const Model m = test::odd_model();
  Layout l;
  l.dp = 2;
  l.zero = 3;
  CHECK(zero_shard_params(zero_unit_params(m, l, 0), 2) == 58'812);
  CHECK(zero_shard_params(std::vector<int64_t>{10}, 4) == 3);
}

}  // namespace
}  // namespace shardplan
