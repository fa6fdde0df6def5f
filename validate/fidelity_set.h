// One published GPU training measurement as shardplan prices it (model, cluster, training, layout,
// framework) beside what was measured, and a development set as a list of them. The readers
// (one per set, validate/*_rows.cpp) fill these from data/fidelity/; the scores never look at a
// set's name, a model's name or a row's index.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/training.h"

namespace shardplan {

// Which figure a set publishes. Throughput sets are scored as the step time it implies
// (tokens per step ÷ tokens/s), so every error reads the same way: predicted ÷ measured − 1.
enum class MeasuredFigure { step_time, throughput };

// Where a measured memory figure was read: nvidia-smi counts the CUDA context and NCCL buffers
// beside what the caching allocator reserves (scored against the reserve plus the runtime's);
// PyTorch's max_memory_reserved counts the allocator's segments alone (scored against the
// reserve: the tensors' peak and the allocator's cache).
enum class MemoryReading { nvidia_smi, allocator_reserved };

struct FidelityRow {
  std::string id;     // where the row is in its file, for messages: "rows[17]"
  std::string group;  // same work on the same machine: the planner's choice is among a group
  // Why the row cannot be priced ("layers unknown", "FP8 compute not modelled"); empty when it
  // can. Rows refused while pricing (validate_layout's InputError) get theirs in the pricing.
  std::string refused;

  Model model;
  Cluster cluster;
  Training training;
  Layout layout;

  bool ran = true;                              // false: crashed or out of memory
  std::optional<double> measured_step_time_s;   // none when it crashed or was not recorded
  std::optional<double> measured_memory_bytes;  // per GPU, as the set's MemoryReading reads it
  // The pathological slices the set's README names that this row falls in ("TP > 8"): scored
  // apart, and left out of the headline's second reading.
  std::vector<std::string> pathological;
};

struct FidelitySet {
  std::string name;       // the file's "name"
  std::string file;       // where it was read
  std::string framework;  // framework profile name (validate/sets.h)
  MeasuredFigure figure = MeasuredFigure::step_time;
  std::string figure_field;  // the row field the figure comes from ("iteration_time_ms")
  MemoryReading memory_reading = MemoryReading::allocator_reserved;
  // The memory figure is world rank 0's, a rank of the first pipeline stage (nanotron's benchmark
  // CSV is written by rank 0 alone), not the worst stage's.
  bool memory_on_first_stage = false;
  std::vector<FidelityRow> rows;
};

}  // namespace shardplan
