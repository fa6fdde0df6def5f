// User mistakes as a value-carrying exception: which file, which field, what is wrong, and a hint.
// Bugs are assertions, not InputErrors. Only main() turns these into an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace shardplan {

// Exit codes fixed by docs/conventions.md.
enum class ExitCode : int { ok = 0, user_error = 1, internal_error = 2, nothing_fits = 3 };

struct InputError : std::runtime_error {
  std::string file;    // "llama.json", "--layout", or "" when there is no file
  std::string field;   // "layout.tp", "hidden_size", or ""
  std::string reason;  // "does not divide num_attention_heads=32"
  std::string hint;    // optional: what to do about it

  InputError(std::string file_, std::string field_, std::string reason_, std::string hint_ = "");
};

// "<file>: <field>: <reason>" with the empty parts left out, as docs/conventions.md prints errors.
std::string describe(const InputError& e);

}  // namespace shardplan
