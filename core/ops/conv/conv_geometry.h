// Geometry of a 2-D convolution (conv.cpp's ops; PyTorch's Conv2d: cross-correlation, zero
// padding, no dilation or groups), shared by the conv kernels (conv_gemm.h, conv_im2col.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/ir/attributes.h"
#include "core/ir/shape.h"

namespace plexus::ops {

/// Sizes of one convolution, all >= 1 except padding (>= 0).
/// x [N,C,H,W] * w [F,C,KH,KW] -> y [N,F,OH,OW], OH = (H + 2*ph - KH) / sh + 1, OW likewise.
/// The im2col matrix of image n is col [K, P], K = C*KH*KW, P = OH*OW:
/// col[(c*KH + i)*KW + j, oh*OW + ow] = x[n, c, oh*sh - ph + i, ow*sw - pw + j] (0 outside).
struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t f = 0, kh = 0, kw = 0;       // filters
  int64_t sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;

  int64_t k() const { return c * kh * kw; }
  int64_t p() const { return oh * ow; }
  int64_t image() const { return c * h * w; }
  int64_t out_image() const { return f * p(); }
};

/// The geometry of conv2d over x [N,C,H,W] and w [F,C,KH,KW] with the op's stride and
/// padding attributes, which must be valid (the op's infer checked them); throws
/// ir::Error(Internal) otherwise. conv.cpp.
ConvGeometry conv_geometry(const ir::Shape& x, const ir::Shape& w, const ir::Attributes& attrs);

/// Range [lo, hi) of output columns ow whose input column ow*sw - pw + j lies in [0, W).
inline void valid_columns(const ConvGeometry& g, int64_t j, int64_t& lo, int64_t& hi) {
  const int64_t first = g.pw - j;  // ow*sw >= first
  lo = first <= 0 ? 0 : (first + g.sw - 1) / g.sw;
  const int64_t last = g.w - 1 + g.pw - j;  // ow*sw <= last
  hi = last < 0 ? 0 : std::min(g.ow, last / g.sw + 1);
  lo = std::min(lo, hi);
}

}  // namespace plexus::ops
