// Iteration over an N-d index space shared by up to three operands, each with its own
// element strides (0 where an operand is broadcast). Adjacent dims are merged where every
// operand is contiguous across them, so the common cases become one flat loop. Built when
// a kernel is made; run() allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/ir/shape.h"

namespace plexus::ops {

/// Strides of a tensor of shape `in`, broadcast (numpy rules) to `out`: 0 on broadcast dims.
std::vector<int64_t> broadcast_strides(std::span<const int64_t> in, std::span<const int64_t> out);

class StridedLoop {
 public:
  static constexpr size_t kMaxOperands = 3;

  /// `shape` is the iteration space; `strides[k]` gives operand k's stride per dim.
  StridedLoop(std::span<const int64_t> shape, std::span<const std::vector<int64_t>> strides);

  /// Calls fn(offsets, n, inner_strides) once per innermost row: `offsets[k]` is operand
  /// k's element offset at the row start, `n` the row length, `inner_strides[k]` its stride.
  template <class F>
  void run(F&& fn) const {
    std::array<int64_t, ir::kMaxRank> index{};
    std::array<int64_t, kMaxOperands> offset{};
    const size_t inner = rank_ - 1;
    for (int64_t row = 0; row < rows_; ++row) {
      fn(offset, shape_[inner], inner_strides_);
      for (size_t d = inner; d-- > 0;) {
        for (size_t k = 0; k < kMaxOperands; ++k) offset[k] += strides_[k][d];
        if (++index[d] < shape_[d]) break;
        for (size_t k = 0; k < kMaxOperands; ++k) offset[k] -= strides_[k][d] * shape_[d];
        index[d] = 0;
      }
    }
  }

 private:
  size_t rank_ = 1;
  int64_t rows_ = 1;
  std::array<int64_t, ir::kMaxRank> shape_{};
  std::array<std::array<int64_t, ir::kMaxRank>, kMaxOperands> strides_{};
  std::array<int64_t, kMaxOperands> inner_strides_{};
};

}  // namespace plexus::ops
