#include "executor/state/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/json_reader.h"

namespace shardplan {

namespace {

namespace fs = std::filesystem;

constexpr const char* kManifest = "manifest.json";
constexpr const char* kParams = "params.bin";
constexpr const char* kAdamM = "adam_m.bin";
constexpr const char* kAdamV = "adam_v.bin";

void write_floats(const fs::path& path, const std::vector<float>& values) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(float)));
  f.close();
  if (!f)
    throw InputError(path.string(), "", "cannot write the checkpoint file",
                     "check the folder's space and permissions");
}

std::vector<float> read_floats(const fs::path& path, int64_t count) {
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  if (ec || bytes != static_cast<uintmax_t>(count) * sizeof(float))
    throw InputError(path.string(), "",
                     ec ? "missing"
                        : "holds " + std::to_string(bytes) + " bytes, the manifest says " +
                              std::to_string(count) + " fp32 values",
                     "the checkpoint is incomplete: resume from another one");
  std::vector<float> values(static_cast<size_t>(count));
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes));
  if (!f) throw InputError(path.string(), "", "cannot be read");
  return values;
}

// The folder DIR/latest names.
fs::path latest_folder(const std::string& dir) {
  const fs::path latest = fs::path(dir) / "latest";
  std::ifstream f(latest);
  std::string name;
  if (!(f >> name))
    throw InputError(latest.string(), "", "no checkpoint to resume from",
                     "save one with --checkpoint-dir " + dir + " --checkpoint-every K");
  return fs::path(dir) / name;
}

struct Manifest {
  CheckpointInfo info;
  int64_t adam_step = 0;
};

Manifest read_manifest(const fs::path& path) {
  const nlohmann::json j = read_json_file(path.string());
  ObjectReader r(j, path.string());
  Manifest out;
  CheckpointInfo& c = out.info;
  c.model = r.string("model");
  c.parameters = r.positive_integer("parameters");
  c.step = r.integer("step");
  c.seed = static_cast<uint64_t>(r.integer("seed"));
  c.layout = r.string("layout");
  out.adam_step = r.integer("adam_step");
  r.reject_unknown();
  return out;
}

}  // namespace

std::string save_checkpoint(const std::string& dir, const CheckpointInfo& info,
                            const FullState& state) {
  const std::string name = "step-" + std::to_string(info.step);
  const fs::path tmp = fs::path(dir) / (name + ".tmp");
  fs::create_directories(dir);
  fs::remove_all(tmp);
  fs::create_directory(tmp);
  write_floats(tmp / kParams, state.params);
  write_floats(tmp / kAdamM, state.adam_m);
  write_floats(tmp / kAdamV, state.adam_v);
  write_json_file((tmp / kManifest).string(), {{"model", info.model},
                                               {"parameters", info.parameters},
                                               {"step", info.step},
                                               {"adam_step", state.adam_step},
                                               {"seed", info.seed},
                                               {"layout", info.layout}});
  // An earlier run into this folder may have left step-N (or step-N-K), which latest may name: the
  // new one takes the first free name of step-N, step-N-2, ... and the earlier ones go only once
  // latest names it, so a kill at any point leaves latest naming a whole checkpoint.
  fs::path final_path = fs::path(dir) / name;
  for (int copy = 2; fs::exists(final_path); ++copy)
    final_path = fs::path(dir) / (name + "-" + std::to_string(copy));
  std::vector<fs::path> replaced;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string other = e.path().filename().string();
    const bool copy = other.starts_with(name + "-") &&
                      other.find_first_not_of("0123456789", name.size() + 1) == std::string::npos;
    if (other == name || copy) replaced.push_back(e.path());
  }
  fs::rename(tmp, final_path);
  const fs::path latest_tmp = fs::path(dir) / "latest.tmp";
  {
    std::ofstream f(latest_tmp, std::ios::trunc);
    f << final_path.filename().string() << "\n";
    f.close();
    if (!f) throw InputError(latest_tmp.string(), "", "cannot write the checkpoint pointer");
  }
  fs::rename(latest_tmp, fs::path(dir) / "latest");
  for (const fs::path& earlier : replaced) fs::remove_all(earlier);
  return final_path.string();
}

CheckpointInfo check_checkpoint_model(const std::string& dir, const std::string& name,
                                      int64_t parameters) {
  const fs::path manifest = latest_folder(dir) / kManifest;
  const CheckpointInfo c = read_manifest(manifest).info;
  if (c.model != name || c.parameters != parameters)
    throw InputError(manifest.string(), "model",
                     "the checkpoint is of " + c.model + " (" + std::to_string(c.parameters) +
                         " parameters), the plan trains " + name + " (" +
                         std::to_string(parameters) + ")",
                     "resume with the model it was saved from, or use another --checkpoint-dir");
  return c;
}

FullState load_latest_checkpoint(const std::string& dir) {
  const fs::path folder = latest_folder(dir);
  const Manifest c = read_manifest(folder / kManifest);
  FullState s;
  s.params = read_floats(folder / kParams, c.info.parameters);
  s.adam_m = read_floats(folder / kAdamM, c.info.parameters);
  s.adam_v = read_floats(folder / kAdamV, c.info.parameters);
  s.adam_step = c.adam_step;
  return s;
}

}  // namespace shardplan
