// The one reader of `struct_size` (plexus.h, "ABI rules"): every options struct the C API
// reads and every out-struct it fills goes through read_struct / write_struct, so each
// accepts the struct of every older C API version (a prefix of today's) and of newer ones,
// and no other size.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
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

/// The versions of a struct: the end of each version's last field (end_of), oldest first,
/// today's last. A caller of a version has its struct_size at that end or at its sizeof
/// (the end rounded up to the struct's alignment).
using StructVersions = std::initializer_list<size_t>;

/// Checks a caller's `struct_size` against the struct's `versions`. Throws InvalidArgument
/// "<what>->struct_size is N, at least M expected (<hint>)" short of the first version, and
/// "<what>->struct_size is N, not the size of a version of the struct (<sizes> bytes, or more
/// from a newer header; <hint>)" for a size below today's sizeof that is not a version's: it
/// would end inside a field (a pointer half the caller's bytes and half the default's) or
/// take part of a version. Returns the bytes of the caller's struct Plexus may touch:
/// min(struct_size, today_size). Internal when the last version does not end the struct.
size_t caller_bytes(size_t struct_size, size_t today_size, size_t alignment, StructVersions versions,
                    const std::string& what, const std::string& hint);

/// Today's struct from a caller's: `defaults` (from the struct's _init function) overwritten
/// by the bytes the caller's struct_size covers, so fields an older caller lacks keep their
/// defaults and fields a newer caller adds are ignored. `caller` must not be NULL.
template <class S>
S read_struct(const S& caller, S defaults, StructVersions versions, const std::string& what, const std::string& init) {
  const size_t bytes = caller_bytes(caller.struct_size, sizeof(S), alignof(S), versions, what, "call " + init);
  std::memcpy(static_cast<void*>(&defaults), &caller, bytes);
  return defaults;
}

/// Writes `full` to a caller's out-struct, but only the bytes its struct_size covers:
/// fields past it (an older caller's struct ends before them) are not written, and
/// struct_size keeps the caller's value. `caller` must not be NULL.
template <class S>
void write_struct(S& caller, S full, StructVersions versions, const std::string& what) {
  const size_t bytes =
      caller_bytes(caller.struct_size, sizeof(S), alignof(S), versions, what, "set it to sizeof the struct");
  full.struct_size = caller.struct_size;
  std::memcpy(static_cast<void*>(&caller), &full, bytes);
}

}  // namespace plexus::abi
