// A checkpoint's manifest, as `execute --resume` reads it: check_checkpoint_model against the
// plan's model, then load_latest_checkpoint. The bytes become DIR/step-1/manifest.json in a folder
// made once per process, whose DIR/latest names step-1 and whose state files hold kParameters
// floats each (the seeds' "parameters"), so that a manifest that passes the check loads whole.
#include <stdlib.h>  // mkdtemp (POSIX)

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "executor/state/checkpoint.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

namespace fs = std::filesystem;

constexpr int64_t kParameters = 4;

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

// The folder: made on first use, removed when the process exits normally.
struct CheckpointDir {
  fs::path path;

  CheckpointDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/shardplan-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) std::abort();
    path = pattern;
    fs::create_directory(path / "step-1");
    write_file(path / "latest", "step-1\n");
    const std::string floats(kParameters * sizeof(float), '\0');
    for (const char* name : {"params.bin", "adam_m.bin", "adam_v.bin"})
      write_file(path / "step-1" / name, floats);
  }
  ~CheckpointDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  CheckpointDir(const CheckpointDir&) = delete;
  CheckpointDir& operator=(const CheckpointDir&) = delete;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  static const CheckpointDir checkpoint;
  const std::string dir = checkpoint.path.string();
  write_file(checkpoint.path / "step-1" / "manifest.json", fuzz::as_text(data, size));
  return fuzz::refusal_is_fine([&] {
    check_checkpoint_model(dir, "gpt-tiny", kParameters);
    load_latest_checkpoint(dir);
  });
}
