// The core's one exception type (core/ir/error.cpp): the code and message a failure
// carries, and codes equal to the C API's plx_status values that abi/src returns.
#include "core/ir/error.h"

#include <gtest/gtest.h>

#include <plexus/types.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace plexus::ir {
namespace {

TEST(Error, FailThrowsTheCodeAndTheWholeMessage) {
  try {
    fail(ErrorCode::ShapeMismatch, "op 'matmul#3': inner dims 3 and 4 differ");
    FAIL() << "fail() returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
    EXPECT_STREQ(e.what(), "op 'matmul#3': inner dims 3 and 4 differ");
  }
}

TEST(Error, IsARuntimeErrorAndCopiesKeepTheCode) {
  const Error original(ErrorCode::Timeout, "replica 1 never arrived");
  const Error copy = original;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
  EXPECT_EQ(copy.code(), ErrorCode::Timeout);
  EXPECT_STREQ(copy.what(), "replica 1 never arrived");
  const std::runtime_error& base = copy;
  EXPECT_STREQ(base.what(), "replica 1 never arrived");
}

TEST(Error, CodesEqualTheCApisStatuses) {
  const std::pair<ErrorCode, int> pairs[] = {
      {ErrorCode::InvalidArgument, PLX_ERR_INVALID_ARGUMENT},
      {ErrorCode::UnknownOp, PLX_ERR_UNKNOWN_OP},
      {ErrorCode::ShapeMismatch, PLX_ERR_SHAPE_MISMATCH},
      {ErrorCode::DTypeMismatch, PLX_ERR_DTYPE_MISMATCH},
      {ErrorCode::NotFound, PLX_ERR_NOT_FOUND},
      {ErrorCode::OutOfDeviceMemory, PLX_ERR_OUT_OF_DEVICE_MEMORY},
      {ErrorCode::InvalidGrouping, PLX_ERR_INVALID_GROUPING},
      {ErrorCode::Io, PLX_ERR_IO},
      {ErrorCode::BadFormat, PLX_ERR_BAD_FORMAT},
      {ErrorCode::Runtime, PLX_ERR_RUNTIME},
      {ErrorCode::Plugin, PLX_ERR_PLUGIN},
      {ErrorCode::Timeout, PLX_ERR_TIMEOUT},
      {ErrorCode::Cancelled, PLX_ERR_CANCELLED},
      {ErrorCode::Unsupported, PLX_ERR_UNSUPPORTED},
      {ErrorCode::BufferTooSmall, PLX_ERR_BUFFER_TOO_SMALL},
      {ErrorCode::Internal, PLX_ERR_INTERNAL},
  };
  for (const auto& [code, status] : pairs) EXPECT_EQ(static_cast<int>(code), status) << status;
}

}  // namespace
}  // namespace plexus::ir
