// Direct convolution kernels for x86-64 CPUs with AVX2 and FMA, stride 1 and no padding
// (conv_gemm.h uses im2col otherwise): they read x in place at per-tap offsets, so no im2col
// matrix is written (the im2col path spends about as long writing it as multiplying when
// K * OW is small, as on the seed CNNs). Output pixels go in vectors of 8 consecutive pixels
// of an output row; a row's last vector is masked when OW % 8 != 0.
//   forward      register tiles of up to 6 filters x 2 pixel vectors (from the same or
//                different rows) accumulated over the K = C*KH*KW taps; each output starts
//                from its bias (or 0) and adds its taps in order (c, i, j), one FMA each
//                (conv_direct.cpp).
//                On AVX-512 CPUs: tiles of up to 6 filters x 4-7 pairs of pixel vectors (16
//                lanes, from halves_), the same order of taps (conv_direct_forward_avx512.cpp)
//   grad_input   register tiles of up to 6 (tap, channel) rows x 2 pixel vectors of dy (4
//                when a tile has at most 2 rows), summed over the F filters in order, then
//                added to dx (masked read-modify-write); dx's elements receive their terms
//                in (image, vector group, row block) order (conv_direct_grad_input.cpp).
//                On AVX-512 CPUs: tiles of up to 6 rows x up to 8 pairs of pixel vectors
//                (16 lanes), rows in (column tap j, row tap i, channel) order, blocked per
//                column tap, tiles in (pair group, row block) order
//                (conv_direct_grad_input_avx512.cpp)
//   grad_weight  register tiles of up to 3 filters x 4 taps, 8 lanes each, accumulated over
//                the pixel vectors of chunks of images (>= 512 pixels, in order); each lane
//                sum is kept between chunks, and dw is the sum of a tile's 8 lanes in a fixed
//                tree at the end (conv_direct_grad_weight.cpp).
//                On AVX-512 CPUs: tiles of up to 4 filters x 6 taps, 16 lanes (pairs of
//                pixel vectors) each, 16 lane sums per weight (conv_direct_grad_weight_avx512.cpp)
// Fixed orders throughout: results do not depend on threads or timing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ops/conv/conv_geometry.h"

namespace plexus::ops {

/// Up to 8 consecutive output pixels of one output row: x offset of the first one's window
/// (its top-left tap) within an image, and its offset within a filter plane of y.
struct PixelVector {
  int64_t x, y;
};

/// Up to 8 consecutive output pixels of one output row, as PixelVector, with their count
/// (0 for the padding vector that completes an odd number of pairs).
struct LanedVector {
  int64_t x, y, lanes;
};

/// Which instruction set the direct kernels use: AVX2 + FMA everywhere they apply, AVX-512
/// (F, VL, DQ) where the CPU has it.
enum class DirectIsa { Avx2, Avx512 };

/// The direct kernels planned for one geometry. Cheap enough to copy once per kernel; the
/// run functions are const, allocate nothing, and run on the calling thread.
class DirectConv {
 public:
  /// True when these kernels handle g on this CPU: stride 1, no padding, AVX2 and FMA.
  static bool applies(const ConvGeometry& g);

  /// The widest DirectIsa this CPU runs; AVX2 when the environment sets PLEXUS_CONV_ISA=avx2
  /// (to compare the two in a benchmark).
  static DirectIsa best_isa();

  /// Precomputes tap offsets and pixel vectors; g must satisfy applies(), and the CPU must
  /// run isa.
  explicit DirectConv(const ConvGeometry& g, DirectIsa isa = best_isa());

  DirectIsa isa() const { return isa_; }

  /// Scratch floats forward() needs (w repacked per block of filters).
  int64_t forward_scratch_floats() const;
  /// Scratch floats grad_input() needs (w repacked per block of channels).
  int64_t grad_input_scratch_floats() const;
  /// Scratch floats grad_weight() needs (8 lane sums per weight).
  int64_t grad_weight_scratch_floats() const;

  /// y [N,F,OH,OW] = conv2d(x [N,C,H,W], w [F,C,KH,KW]) + b [F] (b may be null); with relu,
  /// relu of that (AVX-512: as the tiles store, AVX2: over each image once written).
  void forward(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu) const;
  /// forward() of images [n0, n0 + count) only: x is the whole batch, y image n0's output
  /// (image n at y + (n - n0) * F*OH*OW). The same bits as forward() gives those images.
  void forward_images(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu,
                      int64_t n0, int64_t count) const;
  /// dx [N,C,H,W] = conv2d's gradient w.r.t. x for dy [N,F,OH,OW], given w.
  void grad_input(const float* dy, const float* w, float* dx, float* scratch) const;
  /// dw [F,C,KH,KW] = conv2d's gradient w.r.t. w for dy [N,F,OH,OW], given x.
  void grad_weight(const float* x, const float* dy, float* dw, float* scratch) const;
  /// Images per chunk of grad_weight's lane sums: >= 512 output pixels, at most N.
  int64_t grad_weight_images() const;
  /// grad_weight() one chunk at a time, for callers that make dy a chunk at a time: the
  /// lane sums in `sums` (grad_weight_scratch_floats()) += the chunk of `images` images
  /// from image n0 (x and dy at that image; n0 == 0 zeroes the sums first). With chunks of
  /// grad_weight_images() images in batch order, grad_weight_end() then gives grad_weight()'s bits.
  void grad_weight_add(const float* x, const float* dy, int64_t n0, int64_t images, float* sums) const;
  /// dw [F,C,KH,KW] = the lane sums of grad_weight_add(), each in a fixed tree.
  void grad_weight_end(float* dw, const float* sums) const;

 private:
  /// forward() on AVX-512 (conv_direct_forward_avx512.cpp).
  void forward_avx512(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu, int64_t n0,
                      int64_t count) const;
  /// grad_input() on AVX-512 (conv_direct_grad_input_avx512.cpp), and its scratch floats.
  void grad_input_avx512(const float* dy, const float* w, float* dx, float* scratch) const;
  int64_t grad_input_avx512_scratch_floats() const;

  /// grad_weight_add() (a chunk's images into zeroed or running sums) and grad_weight_end()
  /// on AVX-512 (conv_direct_grad_weight_avx512.cpp), and their scratch floats.
  void grad_weight_avx512_add(const float* x, const float* dy, int64_t images, float* sums) const;
  void grad_weight_avx512_end(float* dw, const float* sums) const;
  int64_t grad_weight_avx512_scratch_floats() const;

  ConvGeometry g_;
  DirectIsa isa_;
  std::vector<int64_t> offsets_;     // x offset of tap (c, i, j): (c*H + i)*W + j
  std::vector<int64_t> input_rows_;  // grad_input's rows (i, j, c): dx offset (c*H + i)*W + j
  std::vector<PixelVector> full_;    // the 8-pixel vectors of an image, row-major
  std::vector<PixelVector> tail_;    // each row's last vector when OW % 8 != 0
  std::vector<int64_t> column_rows_;   // AVX-512 grad_input's rows (j, i, c): dx offset (c*H + i)*W + j
  std::vector<LanedVector> halves_;    // all pixel vectors, row-major, padded to an even count
};

}  // namespace plexus::ops
