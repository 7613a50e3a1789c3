// The one exception hierarchy of the core. Every failure inside Plexus is an ir::Error
// carrying an ErrorCode; abi/src turns it into a plx_status and plx_last_error() at the
// C boundary (the only place exceptions are caught and translated).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace plexus::ir {

/// Error categories. Values equal the C API's plx_status codes (abi/include/plexus/plexus.h)
/// and are append-only.
enum class ErrorCode : int32_t {
  InvalidArgument = 1,
  UnknownOp = 2,
  ShapeMismatch = 3,
  DTypeMismatch = 4,
  NotFound = 5,
  OutOfDeviceMemory = 6,
  InvalidGrouping = 7,
  Io = 8,
  BadFormat = 9,
  Runtime = 10,
  Plugin = 11,
  Timeout = 12,
  Cancelled = 13,
  Unsupported = 14,
  BufferTooSmall = 15,
  StillRunning = 16,
  Internal = 99,
};

/// Exception thrown by the core. `what()` is the full user-facing message, which names
/// the argument, op or file at fault and the rule broken. Copyable; not thread-bound.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// Throws Error(code, message). Marked cold: error paths are never on the hot loop.
[[noreturn, gnu::cold]] void fail(ErrorCode code, const std::string& message);

}  // namespace plexus::ir
