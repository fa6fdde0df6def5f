// Checkpoints on disk: a second run into a folder that holds a checkpoint never takes the place of
// the one DIR/latest names before its own is whole and latest names it.
#include "executor/state/checkpoint.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

namespace shardplan {
namespace {

namespace fs = std::filesystem;

std::string latest_name(const fs::path& dir) {
  std::ifstream f(dir / "latest");
  std::string name;
  f >> name;
  return name;
}

FullState state_of(float value) {
  FullState s;
  s.params.assign(6, value);
  s.adam_m.assign(6, value / 2);
  s.adam_v.assign(6, value / 4);
  s.adam_step = 2;
  return s;
}

TEST_CASE("checkpoint: a run over an earlier run's step-N keeps it until latest names the new one",
          "[checkpoint]") {
  const fs::path dir = fs::temp_directory_path() / "shardplan_checkpoint_test";
  fs::remove_all(dir);
  const CheckpointInfo info{"tiny", 6, 2, 7, "tp=1"};
  save_checkpoint(dir.string(), info, state_of(1));
  REQUIRE(latest_name(dir) == "step-2");

  // The second run saves the same step: its folder is not the one latest named before it.
  const std::string second = save_checkpoint(dir.string(), info, state_of(3));
  CHECK(fs::path(second).filename() == "step-2-2");
  CHECK(latest_name(dir) == "step-2-2");
  CHECK(load_latest_checkpoint(dir.string()).params == state_of(3).params);
  CHECK_FALSE(fs::exists(dir / "step-2"));  // the earlier one goes once latest moved on
  CHECK_FALSE(fs::exists(dir / "step-2.tmp"));

  // A third takes the freed name, and the second goes.
  save_checkpoint(dir.string(), info, state_of(5));
  CHECK(latest_name(dir) == "step-2");
  CHECK(load_latest_checkpoint(dir.string()).params == state_of(5).params);
  CHECK_FALSE(fs::exists(dir / "step-2-2"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shardplan
