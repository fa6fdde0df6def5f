// A guard on the cost model's fidelity: the whole development set priced, each set's headline
// MAPE and signed mean held under bounds that hold today with a clear margin. The figures are
// printed (WARN) on every run; when the model changes, retighten the bounds to the new figures.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "validate/pricing.h"
#include "validate/set_score.h"
#include "validate/sets.h"

using namespace shardplan;

namespace {

const std::string kFolder = std::string(SHARDPLAN_SOURCE_DIR) + "/data/fidelity";

SetScores scores_of(const std::string& name) {
  const FidelitySet s = read_set(find_set(name), kFolder);
  const SetScores out = score_set(s, price_set(s));
  WARN(name << ": step time MAPE " << out.step_time.mape_pct << "%, median "
            << out.step_time.median_abs_pct << "%, signed mean " << out.step_time.signed_mean_pct
            << "% over " << out.step_time.count << " rows (" << out.refused << " refused)");
  return out;
}

// Bound = the figure measured on 2026-11-26/27 plus a margin; |signed mean| is bounded alike.
struct Bounds {
  double mape_pct;
  double abs_signed_mean_pct;
};

void check_bounds(const SetScores& s, Bounds b) {
  CHECK(s.step_time.count > 0);
  CHECK(s.step_time.mape_pct < b.mape_pct);
  CHECK(std::abs(s.step_time.signed_mean_pct) < b.abs_signed_mean_pct);
}

}  // namespace

// Measured 2026-11-26/27 with launch costs, NCCL's model, compute slowed beside communication,
// the frameworks' data-parallel overlap, cross-entropy and SwiGLU kernels, and MPT's Triton
// attention priced as FlashAttention-1 (MosaicML 27.8% → 15.1%), the Hopper GEMM efficiency fitted
// (MosaicML → 13.8%, Ultra-Scale 53.7% → 52.9%), ZeRO-1/2 gathers as the frameworks run them and
// the A100's sustained clock fitted (BLOOM 27.8% → 17.8%, MosaicML → 8.2%), then GEMM tiles and
// splits of k as an H100's cuBLAS ran them (vTrain 7.4% → 7.6%, BLOOM → 18.9%, MosaicML → 9.2%)
// (before all of them: vTrain 39.3%, BLOOM 31.3%, Ultra-Scale 67.5%, MosaicML 33.7%, every signed
// mean −MAPE).
constexpr Bounds kVtrain{9, 4};   // MAPE 7.6%, signed mean −1.8%
constexpr Bounds kBloom{20, 20};  // MAPE 18.9%, signed mean −18.9% (135 rows)
// Ultra-Scale with nanotron's own layer split: every row priced (899 measured, pathological ones
// in; before, 829 and MAPE 52.7%, signed mean −48.9%); then nanotron's host time fitted (52.6% →
// 51.1%; outside the pathological slices 29.1% → 27.3%, median 16.4% → 14.7%).
constexpr Bounds kUltrascale{53, 52};  // MAPE 51.1%, signed mean −50.4%
constexpr Bounds kMosaicml{10, 5};     // MAPE 9.2%, signed mean −3.6%
// NeMo's dense rows on DGX H100, B200 and GB200 with Transformer Engine's FP8 linears and its
// userbuffers overlap of the sequence-parallel collectives (2026-11-28; 31 rows, the rest
// refused): before the overlap, MAPE 23.3%, signed mean +21.0% (20 rows).
// Then the Qwen3 MoE rows, priced from presets of their Hugging Face configs (2026-11-28; 53
// rows): 17.4%, −9.9%; the dense rows still 7.8%, the MoE rows 31.0%, −23.2% (+11% to +17%
// against the newest releases, −23% to −61% against releases that measured the same layouts up
// to 1.5× slower).
constexpr Bounds kNemo{20, 12};  // MAPE 17.4%, signed mean −9.9%
constexpr int kNemoPriced = 53;

// Memory (the allocator's reserve against the sets' reading), and the false "fits": measured with
// the frameworks' buffers, loss copies and eager SwiGLU, the caching allocator's replay and the
// runtime's NCCL buffers, nanotron's layer split, which loads its first pipeline rank, and its
// attention's second K and V, and the gradients a layer's backward holds (before: BLOOM 25.9%,
// Ultra-Scale 38.9%, then 28.2% and 202 false fits of 711 crashes priced, then 18.7%, then 14.8%
// and 187 of 807).
constexpr Bounds kBloomMemory{19, 19};             // MAPE 16.9%, signed mean −16.9% (96 rows)
constexpr Bounds kUltrascaleMemory{16, 16};        // MAPE 14.5%, signed mean −13.6% (899 rows)
constexpr double kUltrascaleFalseFitShare = 0.25;  // 183 of 807 crashes predicted to fit: 22.7%

void check_memory(const SetScores& s, Bounds b) {
  REQUIRE(s.memory);
  WARN("memory MAPE " << s.memory->mape_pct << "%, signed mean " << s.memory->signed_mean_pct
                      << "% over " << s.memory->count << " rows; false fits "
                      << s.fits.fits_crashed);
  CHECK(s.memory->mape_pct < b.mape_pct);
  CHECK(std::abs(s.memory->signed_mean_pct) < b.abs_signed_mean_pct);
}

TEST_CASE("the development set's headline figures stay within bounds", "[regression]") {
  check_bounds(scores_of("vtrain_single_a100"), kVtrain);
  const SetScores bloom = scores_of("bloom_chronicles");
  check_bounds(bloom, kBloom);
  check_memory(bloom, kBloomMemory);
  const SetScores ultrascale = scores_of("ultrascale_dev");
  check_bounds(ultrascale, kUltrascale);
  check_memory(ultrascale, kUltrascaleMemory);
  const FitsConfusion& fits = ultrascale.fits;
  CHECK(fits.fits_crashed < kUltrascaleFalseFitShare * (fits.fits_crashed + fits.no_fit_crashed));
  check_bounds(scores_of("mosaicml_benchmarks"), kMosaicml);
  const SetScores nemo = scores_of("nemo_performance");
  check_bounds(nemo, kNemo);
  CHECK(nemo.step_time.count == kNemoPriced);
}
