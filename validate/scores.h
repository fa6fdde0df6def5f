// The figures a fidelity report is made of: error statistics of predicted against measured
// (MAPE, median, max, signed mean), the fits-versus-crashed confusion matrix, Spearman's rank
// correlation and the planner's regret within a group of layouts doing the same work.
#pragma once

#include <optional>
#include <vector>

namespace shardplan {

// Relative errors e = predicted / measured − 1 (positive: predicted too high, for a time: too
// slow), summarised in percent.
struct ErrorStats {
  int count = 0;
  double mape_pct = 0;         // mean |e|
  double median_abs_pct = 0;   // median |e|
  double max_abs_pct = 0;      // max |e|
  double signed_mean_pct = 0;  // mean e: the bias
};
ErrorStats error_stats(const std::vector<double>& errors);

// Predicted fits / does not fit × ran / crashed (or out of memory).
struct FitsConfusion {
  int fits_ran = 0;
  int fits_crashed = 0;  // the false "fits": the planner would pick a layout that crashes
  int no_fit_ran = 0;    // the false "does not fit": a layout the planner would never try
  int no_fit_crashed = 0;

  int count() const { return fits_ran + fits_crashed + no_fit_ran + no_fit_crashed; }
  double accuracy() const;  // (fits_ran + no_fit_crashed) / count; 0 when empty
  void add(bool predicted_fits, bool ran);
};

// Spearman's rank correlation: Pearson's correlation of the ranks, ties given their average rank
// (Spearman 1904; the standard tie correction). None with fewer than 2 values or a constant side.
std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b);

// One measured layout of a group, as the planner would see it.
struct GroupMember {
  double predicted_s = 0;
  double measured_s = 0;
  bool predicted_fits = true;
};

// The planner's regret in a group: it picks the layout it predicts fastest among those it
// predicts fit; regret = the pick's measured time / the measured best − 1. None when it predicts
// none fits or the group is empty.
std::optional<double> pick_regret(const std::vector<GroupMember>& group);

}  // namespace shardplan
