// max_pool2d's 2x2 tiles (kernel 2, stride 2, no padding: the seeds' MaxPool2d(2)) on
// AVX-512, one output row at a time: 16 output columns per vector step, the last step
// masked. The same values as pooling.cpp's portable tiled path, bit for bit (its file
// comment: ties to the first maximum in row-major window order, the last NaN wins, a -0
// dy lands as +0). x86-64 only; call these only where max_pool_avx512_available().
#pragma once

#include <cstdint>

namespace plexus::ops {

/// Output columns from which a row goes faster on AVX-512 (measured, bench/reduce_bench:
/// seed 003's second pool, rows of 4 outputs, ran 1.3-2x slower with a quarter of a vector
/// per step than on the portable path's 4-wide steps).
inline constexpr int64_t kMaxPoolAvx512MinColumns = 8;

/// Whether this CPU runs the functions below (AVX-512 F), and the environment does not
/// ask for the portable path (PLEXUS_POOL_ISA=baseline, for tests and comparisons). Read
/// at each call: kernels decide when they are created.
bool max_pool_avx512_available();

/// Output row y [ow] of 2x2 windows over the two input rows top [2*ow] and top + w; with
/// relu, relu(max) = max > 0 ? max : +0 (a relu epilogue, core/compile/relu_fusion.h).
void max_pool2x2_row_avx512(const float* top, int64_t w, int64_t ow, float* y, bool relu);

/// max_pool2d_grad of one output row: dx_top [2*ow] and dx_top + w (the two input rows the
/// windows cover, row stride w) get dy [ow] at each window's argmax of x (top, top + w) and
/// zero elsewhere; with relu_folded, zero also where the window's max is not > 0.
void max_pool2x2_grad_row_avx512(const float* top, int64_t w, int64_t ow, const float* dy, float* dx_top,
                                 bool relu_folded);

}  // namespace plexus::ops
