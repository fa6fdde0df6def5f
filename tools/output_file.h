// Checks on the files a subcommand will write, made before it spends minutes measuring.
#pragma once

#include <string>

namespace shardplan::cli {

// InputError naming `path` when the folder it would be written into does not exist, when it is
// a folder itself, or when it cannot be written (check_writable).
void check_output_folder(const std::string& path);

}  // namespace shardplan::cli
