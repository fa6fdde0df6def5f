// What every fuzz target shares: the fuzzer's bytes as the text or JSON a loader reads, and the
// rule that an InputError is the expected refusal (exit 1 in tools/main.cpp) while anything else
// escapes to libFuzzer as a crash (exit 2, "internal error", in the CLI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/json_reader.h"

namespace shardplan::fuzz {

inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// parse_json on the bytes, as read_json_file parses a file's (without the file).
inline nlohmann::json parse_bytes(const uint8_t* data, size_t size, const std::string& source) {
  std::istringstream in(as_text(data, size));
  return parse_json(in, source);
}

// Runs `load`; a refusal is a valid outcome, so it is swallowed. Returns libFuzzer's 0.
template <class Load>
int refusal_is_fine(Load load) {
  try {
    load();
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace shardplan::fuzz
