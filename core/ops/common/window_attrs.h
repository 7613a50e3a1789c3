// Attribute parsing shared by the 2-D window ops (conv.cpp, pooling.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace plexus::ops {

/// Reads a (height, width) pair such as a stride or padding from an ints attribute of 1
/// or 2 values (one value stands for both dims). False when `v` has another length or a
/// value below `min`.
inline bool pair_attr(const std::vector<int64_t>& v, int64_t min, int64_t& height, int64_t& width) {
  if (v.size() == 1) {
    height = width = v[0];
  } else if (v.size() == 2) {
    height = v[0];
    width = v[1];
  } else {
    return false;
  }
  return height >= min && width >= min;
}

}  // namespace plexus::ops
