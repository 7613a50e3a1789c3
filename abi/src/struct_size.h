// The one reader of `struct_size` (plexus.h, "ABI rules"): every options struct the C API
// reads and every out-struct it fills goes through read_struct / write_struct, so each
// accepts the struct of every older C API version (a prefix of today's) and of newer ones.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "core/ir/error.h"

namespace plexus::abi {

/// Bytes from the start of struct S to the end of `field`: the struct_size of a caller
/// whose struct ends with that field. Computed on a value, so S needs no standard layout
/// guarantee beyond what C structs have.
template <class S, class F>
size_t end_of(F S::*field) {
  const S probe{};
  return static_cast<size_t>(reinterpret_cast<const char*>(&(probe.*field)) - reinterpret_cast<const char*>(&probe)) +
         sizeof(F);
}

/// Checks a caller's `struct_size`: at least `first_size` (the struct of the version that
/// introduced it), else InvalidArgument "<what>->struct_size is N, at least M expected
/// (<hint>)". Returns the bytes of the caller's struct Plexus may touch:
/// min(struct_size, sizeof today's struct).
size_t caller_bytes(size_t struct_size, size_t today_size, size_t first_size, const std::string& what,
                    const std::string& hint);

/// Today's struct from a caller's: `defaults` (from the struct's _init function) overwritten
/// by the bytes the caller's struct_size covers, so fields an older caller lacks keep their
/// defaults and fields a newer caller adds are ignored. `caller` must not be NULL.
template <class S>
S read_struct(const S& caller, S defaults, size_t first_size, const std::string& what, const std::string& init) {
  const size_t bytes = caller_bytes(caller.struct_size, sizeof(S), first_size, what, "call " + init);
  std::memcpy(static_cast<void*>(&defaults), &caller, bytes);
  return defaults;
}

/// Writes `full` to a caller's out-struct, but only the bytes its struct_size covers:
/// fields past it (an older caller's struct ends before them) are not written, and
/// struct_size keeps the caller's value. `caller` must not be NULL.
template <class S>
void write_struct(S& caller, S full, size_t first_size, const std::string& what) {
  const size_t bytes = caller_bytes(caller.struct_size, sizeof(S), first_size, what, "set it to sizeof the struct");
  full.struct_size = caller.struct_size;
  std::memcpy(static_cast<void*>(&caller), &full, bytes);
}

}  // namespace plexus::abi
