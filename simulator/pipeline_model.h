// Pipeline schedules in closed form: how many micro-batches' activations a stage holds at its
// peak, and how long a step of m micro-batches takes through p stages (the bubble).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/layout.h"

namespace shardplan {

// Micro-batches of one model chunk that pipeline rank `stage` has run forward but not yet
// backward at its peak, in chunk units (a rank holds vpp chunks):
//   GPipe: all m (Huang et al. 2019).
//   1F1B: min(p − stage, m): p − stage − 1 warm-up forwards plus the one in flight
//     (Narayanan et al. 2021 §2.2.1; Megatron-LM schedules.py num_warmup_microbatches).
//   interleaved: min(2(p − stage − 1) + (v − 1)·p + 1, m·v) (Megatron-LM's interleaved warm-up),
//     all m·v when m == p (Megatron-LM then runs every forward first); for the first stage
//     p·v + p − 1 chunks, i.e. p·(1 + (p − 1)/(p·v)) stages' worth (Korthikanti et al. 2022
//     §4.2.3).
//   ZB-H1: min(p, m) on every stage, counted until the micro-batch's W (Qi et al. 2024 §3.1: the
//     peak of 1F1B's first stage, p·M_B, on all of them); those past their B hold only what their
//     W reads (split_backward_peaks below).
//   ZB-H2: min(2p − 1, m) on every stage, the same way (Qi et al. 2024 §3.1: (2p − 1)·M_B).
//   ZB-V: the most chunks its order (core/schedule.h) holds at once, at most 2p: p micro-batches
//     of the stage, 1F1B's first stage's (Qi et al. 2024 §4).
int64_t inflight_chunk_microbatches(const Layout& l, int stage);

// Under a split backward, the moments that can make stage `stage`'s peak, as chunks held whole
// (run forward, their B not yet) and chunks waiting for their W (B run: only W's inputs left),
// core/schedule.h's order counted. ZB-H1: the steady state's first forward and the B after it
// (or, with too few micro-batches for a steady state, the last F-B pair's); ZB-H2: the last B-F
// pair's forward and the B after it; the first's sum is inflight_chunk_microbatches. ZB-V: every
// moment of its order that no other holds as many of both at.
struct HeldMicrobatches {
  int64_t whole = 0, waiting_weight_grad = 0;
};
std::vector<HeldMicrobatches> split_backward_peaks(const Layout& l, int stage);

// Whether every forward runs before any backward: GPipe, and Megatron-LM's interleaved schedule
// when num_microbatches == pp. The last stage then holds all m micro-batches' head inputs and
// softmax, otherwise one at a time.
bool runs_all_forwards_first(const Layout& l);

// The step's pipeline time from the forward+backward time of one micro-batch on each stage (all
// of its chunks). With identical jobs the critical path of a flow shop runs every micro-batch
// through the slowest stage and one micro-batch through all the others:
//   (m·v − 1)·max_i T_i / v + Σ_i T_i / v,
// which for equal stages is (m + (p − 1)/v)·T, Narayanan et al. 2021 §2.2.1–2.2.2.
// Under ZB-H1 (split_passes gives each stage's F_i and W_i inside T_i; B_i is the rest), each
// stage but the slowest adds F_i + B_i − min(m − 1, p − 1)/(p − 1) · min(W_i, F_i, B_i): each W a
// stage postpones fills a wait for a B, as long as it is no longer than the F or B it stands in
// for. For equal stages and m ≥ p the bubble is (p − 1)(F + B − min(W, F, B)), Qi et al. 2024
// §3.1's (p − 1)(F + B − W) when the three are equal; the event simulator of the order
// (core/schedule.h) gives exactly this for every F, B, W, and for m < p a bubble at most this.
// ZB-V's order has no closed form: it is walked with each chunk's F, B and W half the stage's and
// communication free.
// ZB-H2's further pp − 1 warm-up forwards let two W stand in where ZB-H1 had one: each stage but
// the slowest adds F_i + B_i − min(2W_i, 2F_i, B_i) once m ≥ 2p − 1, ZB-H1's term at m ≤ p and
// linearly between, as the event simulator gives it. With F = B = W that is (p − 1)·F, the
// stagger of the parallelogram's start: Qi et al.'s (p − 1)(F + B − 2W) = 0 counts each stage
// from its first pass, where one step's time counts from the first stage's.
struct SplitPasses {
  std::span<const double> forward_s, weight_grad_s;
  // ZB-V: each stage's B compute, recomputation included (the rest of its time, its
  // communication, is shared between F and B by their compute).
  std::span<const double> backward_s = {};
};
double pipeline_time_s(const Layout& l, std::span<const double> stage_time_s,
                       const SplitPasses& split = {});

// Share of the pipeline time the slowest stage idles: 1 − m·max_i T_i / pipeline time; for equal
// stages (p − 1)/(m·v + p − 1).
double bubble_fraction(const Layout& l, std::span<const double> stage_time_s,
                       const SplitPasses& split = {});

}  // namespace shardplan
