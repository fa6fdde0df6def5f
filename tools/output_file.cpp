#include "tools/output_file.h"

#include <filesystem>

#include "core/error.h"

namespace shardplan::cli {

void check_output_folder(const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder))
    throw InputError(path, "", "the folder " + folder.string() + " does not exist",
                     "create it first");
}

}  // namespace shardplan::cli
