// The machine's noise as a synchronous training step meets it: the fixed-work-quantum benchmark
// (FWQ; Sottile & Minnich 2004, "Analysis of microbenchmarks for performance tuning of clusters")
// run on every rank at once, each quantum started together after a barrier. The ranks' medians
// differ where their cores run at different speeds (on a shared VM, at the same moment); the mean
// over the quanta of each one's longest time on any rank, over those times' median, is the noise a
// step that synchronises after every quantum waits for beyond the medians the cost model prices
// (Hoefler, Schneider & Lumsdaine 2010, "Characterizing the influence of system noise on
// large-scale applications by simulation"). `calibrate` prints both; the profile carries the
// second, at the length of the calibration's samples, as Profile::noise (noise_share).
#pragma once

#include <mpi.h>

#include <cstdio>
#include <vector>

namespace shardplan {

struct NoiseTiming {
  double fastest_median_s = 0;  // the quantum's median time on the rank where it is shortest
  double slowest_median_s = 0;  // ... and where it is longest: the ranks' cores differ in speed
  double mean_max_s = 0;        // the mean over the quanta of each one's longest time on any rank
  double median_max_s = 0;      // ... and their median
  int quanta = 0;
};

// What noise adds to a median over such quanta: mean_max_s / median_max_s − 1 (Profile::noise; a
// calibration sample too is charged at the slowest rank's time).
double noise_share(const NoiseTiming& t);

// For each target quantum length, `quanta` quanta of the same fixed work (its size found by a
// first timing on each rank, then agreed on as the smallest) on every rank of `comm`. Every rank
// returns the same timings.
std::vector<NoiseTiming> time_noise(MPI_Comm comm, const std::vector<double>& quantum_s,
                                    int quanta);

void print_noise(std::FILE* out, const std::vector<NoiseTiming>& timings);

}  // namespace shardplan
