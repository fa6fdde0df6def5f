#include "executor/runtime/device_error.h"

#include <fmt/format.h>

#include "executor/runtime/world_comm.h"

namespace shardplan {

namespace {

// The path from the source tree's top folder: everything from the last "executor/" on.
std::string_view source_path(std::string_view file) {
  const size_t at = file.rfind("executor/");
  return at == std::string_view::npos ? file : file.substr(at);
}

}  // namespace

std::string device_status_message(std::string_view call, std::string_view file, int line,
                                  std::string_view error) {
  return fmt::format("{} at {}:{}: {}", call, source_path(file), line, error);
}

void throw_device_error(std::string_view call, std::string_view file, int line,
                        std::string_view error) {
  throw DeviceError(device_status_message(call, file, line, error), world_rank_or_none());
}

}  // namespace shardplan
