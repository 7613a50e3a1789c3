// The conv kernels: im2col / col2im of one image at a time (conv_im2col.h) and BLIS's
// small/unpacked GEMM kernels called directly on it (sgemm_sup.h), so the column matrix
// stays in cache, no operand is packed, and the GEMMs read and write NCHW in place. With
// col [K, P] the im2col matrix of one image (K = C*KH*KW, P = OH*OW, conv_geometry.h):
//   forward      y[n] [F, P] = W [F, K] @ col + b                 per image
//   grad_input   dx[n] = col2im(W^T [K, F] @ dy[n] [F, P])          per image
//   grad_weight  dW [F, K] = sum over chunks of dy [F, G*P] @ col [K, G*P]^T, G images per
//                chunk so that each GEMM sums over >= kConvMinDepth pixels (dy gathered to
//                [F, G*P] when G > 1), the chunks added in order
// A 1x1 kernel with stride 1 and no padding reads x (writes dx) directly: col is x's [C, P].
// All three passes run conv_direct.h's kernels instead where those apply (stride 1, no
// padding, AVX2 and FMA).
// Every kernel runs on the calling thread in a fixed order, so results do not depend on
// timing or on the thread count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/ops/conv/conv_direct.h"
#include "core/ops/conv/conv_geometry.h"

namespace plexus::ops {

/// Which conv kernel.
enum class ConvPass { Forward, GradInput, GradWeight };

/// One conv pass planned for one geometry. Cheap to copy; the run functions are const,
/// allocate nothing, and are thread-safe as long as concurrent calls use different scratch.
class ConvPlan {
 public:
  /// Initialises BLIS; throws ir::Error(Unsupported) on a bad BLIS_ARCH_TYPE.
  ConvPlan(const ConvGeometry& g, ConvPass pass);

  /// Bytes of scratch a run needs (col, and the gathered dy for grad_weight when G > 1).
  int64_t scratch_bytes() const;
  /// What the kernel runs, for reports: "zen3 sup 6x16, 1 image(s) per GEMM" or "direct AVX2".
  std::string description() const;

  /// y [N,F,OH,OW] = conv2d(x [N,C,H,W], w [F,C,KH,KW]) + b [F] (b may be null), with relu
  /// relu of that (a relu epilogue, core/compile/relu_fusion.h). Pass Forward.
  void forward(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu) const;
  /// dx [N,C,H,W] = conv2d's gradient w.r.t. x for dy [N,F,OH,OW], given w. Pass GradInput.
  void grad_input(const float* dy, const float* w, float* dx, float* scratch) const;
  /// dw [F,C,KH,KW] = conv2d's gradient w.r.t. w for dy, given x. Pass GradWeight.
  void grad_weight(const float* x, const float* dy, float* dw, float* scratch) const;

  /// forward() of images [n0, n0 + count) only: x is the whole batch, y image n0's output
  /// (image n at y + (n - n0) * F*OH*OW). The same bits as forward() gives those images.
  void forward_images(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu,
                      int64_t n0, int64_t count) const;
  /// Images per chunk of grad_weight (pass GradWeight): chunks of this many images, in batch
  /// order, the last one fewer.
  int64_t grad_weight_images() const;
  /// grad_weight() a chunk at a time, for callers that make dy a chunk at a time
  /// (conv_pool.cpp): adds the chunk of `images` images from image n0 (x and dy at that
  /// image; n0 == 0 starts the sum) to what dw and scratch hold; grad_weight_end() then
  /// leaves the gradient in dw. With grad_weight_images()'s chunks, grad_weight()'s bits.
  void grad_weight_add(const float* x, const float* dy, int64_t n0, int64_t images, float* dw, float* scratch) const;
  void grad_weight_end(float* dw, const float* scratch) const;

 private:
  /// Images per GEMM: 1, or for grad_weight enough for kConvMinDepth pixels (at most N).
  int64_t images_per_gemm() const;

  ConvGeometry g_;
  ConvPass pass_;
  bool identity_col_;                 // 1x1 kernel, stride 1, no padding: col is the image itself
  std::optional<DirectConv> direct_;  // every pass by conv_direct.h where it applies
};

}  // namespace plexus::ops
