// What `shardplan execute` measured, gathered on rank 0 over MPI into a Measurement
// (core/measurement.h), written as measured.json and as a Chrome trace with the simulator's event
// names (simulator/trace.h).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/measurement.h"
#include "executor/layers/matmul.h"
#include "executor/state/tensor_allocator.h"

namespace shardplan::cli {

// Collective over MPI_COMM_WORLD: every rank's timings of one step, on rank 0 by rank (empty
// elsewhere).
std::vector<std::vector<ActionTiming>> gather_timings(const std::vector<ActionTiming>& mine);

// Collective over MPI_COMM_WORLD: every rank's GEMM FLOPs and seconds of one step, appended on
// rank 0 to `record` (by rank).
void gather_gemms(const MatmulStats& mine, std::vector<MeasuredGemms>& record);

// Collective over MPI_COMM_WORLD: every rank's memory at its total's peak (buffers as other_bytes),
// on rank 0 by rank (empty elsewhere).
std::vector<MeasuredMemory> gather_memory(const TensorAllocator& alloc);

// The last step's timeline.
nlohmann::json measured_trace(const Measurement& m);

}  // namespace shardplan::cli
