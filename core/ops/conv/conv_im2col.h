// im2col and col2im of one image (conv_geometry.h defines the col matrix), the data
// movement of the GEMM-based conv kernels (conv_gemm.h).
#pragma once

#include <cstdint>

#include "core/ops/conv/conv_geometry.h"

namespace plexus::ops {

/// col [K, P] of the image xn [C,H,W], written at col[row * ld + pixel] (ld >= P), zeros
/// where the kernel window reads padding.
void im2col(const ConvGeometry& g, const float* xn, float* col, int64_t ld);

/// dxn [C,H,W] += col2im(col): every col[row * ld + pixel] added to the input element that
/// im2col reads there (im2col's adjoint); padding positions are dropped.
void col2im(const ConvGeometry& g, const float* col, int64_t ld, float* dxn);

}  // namespace plexus::ops
