// Tensor shapes: row-major dims, int64 each, rank 0 for scalars.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace plexus::ir {

using Shape = std::vector<int64_t>;

/// Largest rank a tensor may have (PLX_MAX_RANK in the C API).
inline constexpr size_t kMaxRank = 8;

/// Number of elements (1 for rank 0).
int64_t numel(std::span<const int64_t> shape);

/// "[8,784]"; "[]" for a scalar.
std::string shape_string(std::span<const int64_t> shape);

/// Most elements a tensor may have (2^40: 4 TiB of float32, beyond any host's memory), so
/// sizes in bytes never overflow.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

/// Throws InvalidArgument naming `what` unless rank <= kMaxRank, every dim >= 1 and the
/// shape has at most kMaxElements elements.
void check_shape(std::span<const int64_t> shape, const std::string& what);

/// Throws InvalidArgument naming `what` when `shape` (dims >= 1) has more than kMaxElements
/// elements.
void check_numel(std::span<const int64_t> shape, const std::string& what);

/// Row-major strides in elements.
std::vector<int64_t> row_major_strides(std::span<const int64_t> shape);

/// Numpy broadcasting of two shapes; std::nullopt-like failure is signalled by returning
/// false and leaving `out` untouched.
bool broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, Shape& out);

/// Normalises a possibly negative axis for `rank`; returns -1 when out of range.
int64_t normalize_axis(int64_t axis, size_t rank);

}  // namespace plexus::ir
