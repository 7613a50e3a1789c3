// One-axis attributes shared by ops that work along a single axis of their input (argmax,
// softmax, log_softmax): the axis normalised against the rank (negative counts from the
// end, as numpy and PyTorch), and the row-major shape split around it.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>

#include "core/ops/op_def.h"

namespace plexus::ops {

/// `axis` normalised for input 0's rank; fails (InvalidArgument) with "axis A is out of
/// range for rank R" unless -R <= axis < R.
int64_t checked_axis(const ir::InferContext& ctx, int64_t axis);

/// A row-major shape as [outer, len, inner] around one axis: element (o, k, i) is at
/// (o * len + k) * inner + i, so the axis has stride `inner` (1 for the last axis).
struct AxisSplit {
  int64_t outer = 1;
  int64_t len = 1;
  int64_t inner = 1;
};
AxisSplit split_at_axis(std::span<const int64_t> shape, int64_t axis);

/// Calls fn(start, stride) for each line along the split's axis: its elements are at
/// start + k * stride, k < len. The stride is a compile-time 1 when the axis is the last,
/// so contiguous lines compile to plain (vectorisable) loops.
template <class F>
void for_each_line(const AxisSplit& s, F&& fn) {
  if (s.inner == 1) {
    for (int64_t o = 0; o < s.outer; ++o) fn(o * s.len, std::integral_constant<int64_t, 1>{});
    return;
  }
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) fn(o * s.len * s.inner + i, s.inner);
  }
}

}  // namespace plexus::ops
