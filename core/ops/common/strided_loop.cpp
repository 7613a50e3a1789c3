#include "core/ops/common/strided_loop.h"

#include "core/ir/error.h"

namespace plexus::ops {

std::vector<int64_t> broadcast_strides(std::span<const int64_t> in, std::span<const int64_t> out) {
  std::vector<int64_t> strides(out.size(), 0);
  const std::vector<int64_t> own = ir::row_major_strides(in);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) strides[lead + i] = in[i] == 1 ? 0 : own[i];
  return strides;
}

StridedLoop::StridedLoop(std::span<const int64_t> shape, std::span<const std::vector<int64_t>> strides) {
  if (strides.size() > kMaxOperands) ir::fail(ir::ErrorCode::Internal, "StridedLoop: too many operands");
  // Merge dims from the innermost outwards while every operand stays contiguous.
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, kMaxOperands> merged;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool mergeable = !dims.empty() && [&] {
      for (size_t k = 0; k < strides.size(); ++k) {
        if (merged[k].back() != strides[k][d] * shape[d]) return false;
      }
      return true;
    }();
    if (mergeable) {
      dims.back() *= shape[d];
      for (size_t k = 0; k < strides.size(); ++k) merged[k].back() = strides[k][d];
    } else {
      dims.push_back(shape[d]);
      for (size_t k = 0; k < strides.size(); ++k) merged[k].push_back(strides[k][d]);
    }
  }
  if (dims.empty()) {  // scalar
    dims.push_back(1);
    for (size_t k = 0; k < strides.size(); ++k) merged[k].push_back(0);
  }
  rank_ = dims.size();
  rows_ = 1;
  for (size_t d = 0; d < rank_; ++d) {
    shape_[d] = dims[d];
    if (d + 1 < rank_) rows_ *= dims[d];
    for (size_t k = 0; k < strides.size(); ++k) strides_[k][d] = merged[k][d];
  }
  for (size_t k = 0; k < kMaxOperands; ++k) inner_strides_[k] = strides_[k][rank_ - 1];
}

}  // namespace plexus::ops
