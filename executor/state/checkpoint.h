// Checkpoints of `shardplan execute`: the full training state in the single-rank flat layout
// (parameters, Adam's moments and step) as raw fp32 files plus a JSON manifest, saved atomically.
#pragma once

#include <cstdint>
#include <string>

#include "executor/interpreter.h"

namespace shardplan {

// The manifest (DIR/step-N/manifest.json).
struct CheckpointInfo {
  std::string model;       // the model's name
  int64_t parameters = 0;  // elements of the single-rank flat layout
  int64_t step = 0;        // training steps taken
  uint64_t seed = 0;       // of the data order (and of the initial parameters)
  std::string layout;      // the layout it was saved under (any layout loads it)
};

// Writes DIR/step-N.tmp, renames it to DIR/step-N (DIR/step-N-2, -3, ... where an earlier run
// left step-N), then points DIR/latest at it (latest.tmp + rename), and only then removes the
// earlier run's step-N: a crash at any point leaves DIR/latest naming a whole checkpoint. Returns
// the checkpoint's folder.
std::string save_checkpoint(const std::string& dir, const CheckpointInfo& info,
                            const FullState& state);

// The manifest of the checkpoint DIR/latest names; InputError when there is none, it is broken, or
// it is not of model `name` with `parameters` elements.
CheckpointInfo check_checkpoint_model(const std::string& dir, const std::string& name,
                                      int64_t parameters);

// The state of the checkpoint DIR/latest names, its files' sizes checked against the manifest.
FullState load_latest_checkpoint(const std::string& dir);

}  // namespace shardplan
