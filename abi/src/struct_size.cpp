// The struct_size check shared by read_struct and write_struct (struct_size.h).
#include "abi/src/struct_size.h"

namespace plexus::abi {

size_t caller_bytes(size_t struct_size, size_t today_size, size_t first_size, const std::string& what,
                    const std::string& hint) {
  if (struct_size < first_size) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + "->struct_size is " + std::to_string(struct_size) + ", at least " +
                                                 std::to_string(first_size) + " expected (" + hint + ")");
  }
  return std::min(struct_size, today_size);
}

}  // namespace plexus::abi
