#include "core/error.h"

namespace shardplan {

namespace {
std::string join_parts(const std::string& file, const std::string& field,
                       const std::string& reason) {
  std::string out;
  for (const std::string* part : {&file, &field, &reason}) {
    if (part->empty()) continue;
    if (!out.empty()) out += ": ";
    out += *part;
  }
  return out;
}
}  // namespace

InputError::InputError(std::string file_, std::string field_, std::string reason_,
                       std::string hint_)
    : std::runtime_error(join_parts(file_, field_, reason_)),
      file(std::move(file_)),
      field(std::move(field_)),
      reason(std::move(reason_)),
      hint(std::move(hint_)) {}

std::string describe(const InputError& e) {
  return e.what();
}

}  // namespace shardplan
