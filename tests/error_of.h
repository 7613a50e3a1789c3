// The error a call throws, for tests of bad input.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "core/ir/error.h"

namespace plexus::test {

/// Runs `f` and returns the ir::Error it throws; fails the test when it throws none.
template <class F>
ir::Error error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const ir::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no ir::Error was thrown";
  return ir::Error(ir::ErrorCode::Internal, "no error");
}

}  // namespace plexus::test
