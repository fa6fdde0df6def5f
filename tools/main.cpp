// shardplan: plan, price, run and check LLM training layouts. Only this file exits; everything
// below throws InputError for user mistakes, which become exit code 1 with the file and field.
#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "core/error.h"
#include "tools/subcommand.h"

namespace {

int print_user_error(const shardplan::InputError& e) {
  fmt::print(stderr, "shardplan: error: {}\n", e.what());
  if (!e.hint.empty()) fmt::print(stderr, "  hint: {}\n", e.hint);
  return static_cast<int>(shardplan::ExitCode::user_error);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shardplan;
  CLI::App app{
      "shardplan: plan, price, run and check data/tensor/pipeline/ZeRO layouts for "
      "training large language models"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");

  std::vector<cli::Subcommand> subcommands{
      cli::add_plan(app),      cli::add_estimate(app), cli::add_simulate(app),
      cli::add_execute(app),   cli::add_compare(app),  cli::add_demo(app),
      cli::add_calibrate(app), cli::add_describe(app), cli::add_validate(app),
      cli::add_report(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return print_user_error(InputError("", "", e.what(), "shardplan <command> --help lists its options"));
  }

  try {
    for (const auto& sub : subcommands)
      if (sub.app->parsed()) return sub.run();
  } catch (const InputError& e) {
    return print_user_error(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "shardplan: internal error: {}\n", e.what());
    return static_cast<int>(ExitCode::internal_error);
  }
  return static_cast<int>(ExitCode::internal_error);
}
