#include "core/ir/shape.h"

#include <algorithm>

#include "core/ir/error.h"

namespace plexus::ir {

int64_t numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void check_shape(std::span<const int64_t> shape, const std::string& what) {
  if (shape.size() > kMaxRank) {
    fail(ErrorCode::InvalidArgument, what + ": rank " + std::to_string(shape.size()) +
                                         " exceeds the maximum rank " + std::to_string(kMaxRank));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) {
      fail(ErrorCode::InvalidArgument, what + ": dim " + std::to_string(i) + " of shape " +
                                           shape_string(shape) + " is " + std::to_string(shape[i]) +
                                           ", must be >= 1");
    }
  }
  check_numel(shape, what);
}

void check_numel(std::span<const int64_t> shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > 0 && n > kMaxElements / d) {
      fail(ErrorCode::InvalidArgument, what + ": shape " + shape_string(shape) + " has more than 2^40 elements");
    }
    n *= d;
  }
}

std::vector<int64_t> row_major_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

bool broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, Shape& out) {
  const size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    result[i] = std::max(da, db);
  }
  out = std::move(result);
  return true;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return -1;
  return axis < 0 ? axis + r : axis;
}

}  // namespace plexus::ir
