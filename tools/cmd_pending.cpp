// Subcommands whose issue has not landed yet: they exist in --help and say so when run.
#include <fmt/core.h>

#include "core/error.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

Subcommand add_pending(CLI::App& root, const char* name, const char* summary, const char* issue) {
  CLI::App* app = root.add_subcommand(name, fmt::format("{} (not yet implemented)", summary));
  app->allow_extras();
  return {app, [name, issue] {
            fmt::print(stderr,
                       "shardplan: error: '{}' is not yet implemented (it arrives with {})\n", name,
                       issue);
            return static_cast<int>(ExitCode::internal_error);
          }};
}

}  // namespace shardplan::cli
