// ZeRO's units (core/zero_units.h) by hand: Megatron-LM's buckets filled in backward order, FSDP's
// units with the tied word embedding apart, each unit's shard padded on its own, and the program's
// reductions and gathers carrying the padded units the executor moves.
#include "core/zero_units.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/presets.h"
#include "core/schedule.h"
#include "tests/core/odd_model.h"
#include "tests/core/schedule_fixtures.h"

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
  CHECK(zero_unit_params(m, Training{}, l, 0) ==
        std::vector<int64_t>{220'544});  // under 40M: one bucket
  l.zero = 3;  // tied, pp = 1: the head gathers wte alone, so it is a unit of its own
  CHECK(zero_unit_params(m, Training{}, l, 0) ==
        std::vector<int64_t>{128, 49'984, 49'984, 49'984, 49'984, 16'384, 4'096});
  l.pp = 2;  // the last stage's head holds an lm_head copy (16,384) with the final norm
  CHECK(zero_unit_params(m, Training{}, l, 0) == std::vector<int64_t>{49'984, 49'984, 20'480});
  CHECK(zero_unit_params(m, Training{}, l, 1) == std::vector<int64_t>{16'512, 49'984, 49'984});
}

TEST_CASE("ZeRO shards pad each unit on its own", "[zero]") {
  // odd_model: h = 63, ffn = 126, 3 layers of 4h² + 9h + 2h·ffn + ffn = 32,445 parameters; wte
  // 16,128, wpe 4,032, final norm 126: 117,621 in all. Over 2 ranks each odd layer pads one:
  // 8,064 + 2,016 + 3 · 16,223 + 63 = 58,812, where one shard of the whole would hold 58,811.
  const Model m = test::odd_model();
  Layout l;
  l.dp = 2;
  l.zero = 3;
  CHECK(zero_shard_params(zero_unit_params(m, Training{}, l, 0), 2) == 58'812);
  CHECK(zero_shard_params(std::vector<int64_t>{10}, 4) == 3);
}

TEST_CASE("ZeRO's reductions and gathers carry each unit padded, all-reduces do not", "[zero]") {
  // odd_model over dp=2, fp32: ZeRO's reduce-scatters and all-gathers move each unit as 2 equal
  // pieces, as the executor does. ZeRO-1's one bucket (117,621) moves 2 · 58,811; ZeRO-3's layers
  // (32,445 each) 2 · 16,223, the embedding (wte 16,128 + wpe 4,032) and the head (final norm 126,
  // with the borrowed wte) as they are. Without ZeRO the all-reduce moves the parameters.
  const Model m = test::odd_model();
  Training t = test::small_training();
  t.dtype = t.grad_dtype = Dtype::fp32;
  for (int zero : {0, 1, 3}) {
    Layout l = test::layout(2, 1, 1, 1);
    l.zero = zero;
    const Program p = build_program(m, t, l, 0);
    int padded = 0;
    for (const Action& a : p.actions) {
      if (a.kind != ActionKind::grad_reduce && a.kind != ActionKind::param_gather) continue;
      if (a.group != Group::dp) continue;
      INFO("ZeRO-" << zero << ": " << action_name(a) << " of " << a.params << " parameters");
      if (zero == 1) {
        CHECK(a.params == 117'621);
        CHECK(a.bytes == 117'622 * 4);
      } else if (zero == 3 && a.layer_end - a.layer_begin == 1) {
        CHECK(a.params == 32'445);
        CHECK(a.bytes == 32'446 * 4);
      } else {
        CHECK(a.bytes == a.params * 4);
        continue;
      }
      ++padded;
    }
    // ZeRO-1: the bucket's gather and reduction; ZeRO-3: each layer's two gathers and reduction.
    CHECK(padded == (zero == 0 ? 0 : zero == 1 ? 2 : 3 * m.num_layers));
  }
}

}  // namespace
}  // namespace shardplan
