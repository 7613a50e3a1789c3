// max_pool2d's kernels as functions (pooling.cpp has the ops and their semantics), for
// kernels that pool a tensor they make themselves: the conv -> relu -> max-pool fusion
// (conv_pool.cpp) pools one image's conv output at a time.
#pragma once

#include <cstdint>

#include "core/ir/attributes.h"
#include "core/ir/shape.h"

namespace plexus::ops {

/// Geometry of one max_pool2d: nc planes of H x W, windows kh x kw at stride (sh, sw) with
/// padding (ph, pw), giving nc planes of oh x ow.
struct PoolGeometry {
  int64_t nc = 0, h = 0, w = 0;  // N*C planes of H x W
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;

  /// Whether the windows are k x k tiles: kernel k, stride k, no padding.
  bool tiles(int64_t k) const { return kh == k && kw == k && sh == k && sw == k && ph == 0 && pw == 0; }
};

/// The geometry of max_pool2d (or max_pool2d_grad) over x of shape [N,C,H,W] with the op's
/// attributes kernel / stride / padding, which must be valid (the op's infer checked
/// them); throws ir::Error(Internal) otherwise.
PoolGeometry pool_geometry(const ir::Shape& x, const ir::Attributes& attrs);

/// How a max_pool2d of one geometry runs: the tiled paths where windows tile the plane
/// (2x2 rows on AVX-512 where the CPU has it and PLEXUS_POOL_ISA does not say baseline),
/// the general one otherwise. Decided at construction; cheap to copy.
struct MaxPoolPlan {
  enum class Path { Avx512Rows, Tiles2, Tiles3, General };
  explicit MaxPoolPlan(const PoolGeometry& g);
  PoolGeometry geometry;
  Path path;
};

/// y [nc, oh, ow] = max_pool2d of x [nc, h, w] (float32), relu of each maximum with relu.
/// Runs on the calling thread; the bits do not depend on the path.
void max_pool_forward(const MaxPoolPlan& plan, const float* x, float* y, bool relu);

/// dx [nc, h, w] = max_pool2d_grad of dy [nc, oh, ow] given x (float32; relu_folded as the
/// op's attribute). dx may be x itself where the windows tile the plane (paths Tiles2,
/// Tiles3, Avx512Rows): a window's x is read before its dx is written.
void max_pool_grad(const MaxPoolPlan& plan, const float* x, const float* dy, float* dx, bool relu_folded);

}  // namespace plexus::ops
