#include "tools/output_file.h"

#include <filesystem>

#include "core/error.h"
#include "core/json_reader.h"

namespace shardplan::cli {

void check_output_folder(const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder))
    throw InputError(path, "", "the folder " + folder.string() + " does not exist",
                     "create it first");
  check_writable(path);  // a folder named as the file, or one that is read-only
}

}  // namespace shardplan::cli
