// Direct convolution forward kernel for x86-64 CPUs with AVX2 and FMA: each output tile of
// up to 6 filters x 16 pixels (two vectors of 8 consecutive pixels of an output row, from the
// same or different rows; a row's last vector masked when OW % 8 != 0) is accumulated in
// registers over the K = C*KH*KW window taps, reading x in place at a per-tap offset, so no
// im2col matrix is written (conv_gemm.h's im2col path spends about as long writing it as
// multiplying when K * OW is small). Stride 1 and no padding only; conv_gemm.h uses im2col
// otherwise. Every output starts from its bias (or 0) and adds its taps in order (c, i, j),
// one FMA each: a fixed order, whatever the threads or timing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ops/conv_geometry.h"

namespace plexus::ops {

/// True when direct_forward() handles g on this CPU: stride 1, no padding, AVX2 and FMA.
bool direct_forward_applies(const ConvGeometry& g);

/// x offsets of the K window taps: offsets[(c*KH + i)*KW + j] = (c*H + i)*W + j.
std::vector<int64_t> direct_tap_offsets(const ConvGeometry& g);

/// Scratch floats direct_forward() needs (w repacked per block of 6 filters).
int64_t direct_forward_scratch_floats(const ConvGeometry& g);

/// y [N,F,OH,OW] = conv2d(x [N,C,H,W], w [F,C,KH,KW]) + b [F] (b may be null) for a g with
/// direct_forward_applies(g); `offsets` from direct_tap_offsets(g); `scratch` holds
/// direct_forward_scratch_floats(g) floats. Runs on the calling thread.
void direct_forward(const ConvGeometry& g, const int64_t* offsets, const float* x, const float* w, const float* b,
                    float* y, float* scratch);

}  // namespace plexus::ops
