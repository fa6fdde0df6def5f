// Test helper: runs a call that must throw an InputError and hands the error back for inspection
// (file, field, reason, hint); a call that does not throw fails the test.
#pragma once

#include <catch2/catch.hpp>

#include "core/error.h"

namespace shardplan::testing {

template <class F>
InputError thrown_input_error(F&& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError("", "", "");
}

}  // namespace shardplan::testing
