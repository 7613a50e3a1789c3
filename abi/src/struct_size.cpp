// The struct_size check shared by read_struct and write_struct (struct_size.h).
#include "abi/src/struct_size.h"

namespace plexus::abi {

namespace {

size_t round_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// "32, 48 or 112": the sizeof of each version.
std::string version_sizes(size_t alignment, StructVersions versions) {
  std::string out;
  size_t k = 0;
  for (const size_t end : versions) {
    out += (k == 0 ? "" : k + 1 == versions.size() ? " or " : ", ") + std::to_string(round_up(end, alignment));
    ++k;
  }
  return out;
}

}  // namespace

size_t caller_bytes(size_t struct_size, size_t today_size, size_t alignment, StructVersions versions,
                    const std::string& what, const std::string& hint) {
  if (round_up(*(versions.end() - 1), alignment) != today_size) {
    ir::fail(ir::ErrorCode::Internal, what + ": its struct has " + std::to_string(today_size) +
                                          " bytes but its last version ends at " + std::to_string(*(versions.end() - 1)));
  }
  if (struct_size < *versions.begin()) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + "->struct_size is " + std::to_string(struct_size) + ", at least " +
                                                 std::to_string(*versions.begin()) + " expected (" + hint + ")");
  }
  if (struct_size >= today_size) return today_size;
  for (const size_t end : versions) {
    if (struct_size == end || struct_size == round_up(end, alignment)) return struct_size;
  }
  ir::fail(ir::ErrorCode::InvalidArgument, what + "->struct_size is " + std::to_string(struct_size) +
                                               ", not the size of a version of the struct (" +
                                               version_sizes(alignment, versions) +
                                               " bytes, or more from a newer header; " + hint + ")");
}

}  // namespace plexus::abi
