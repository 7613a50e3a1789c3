#include "core/ops/conv/conv_gemm.h"

#include <algorithm>
#include <cstring>

#include "core/ops/conv/conv_im2col.h"
#include "core/ops/elementwise/relu.h"
#include "core/ops/matmul/sgemm_sup.h"

namespace plexus::ops {

namespace {

/// Pixels each grad_weight GEMM sums over at least (BLIS's sup kc block for haswell-class
/// kernels is 512): shorter sums spend a larger share in the kernel's final reductions.
constexpr int64_t kConvMinDepth = 512;

/// dy of images n0 .. n0+images-1 (dy points at image n0) as [F, images*P], column block i
/// = image n0+i.
void gather_images(const ConvGeometry& g, const float* dy, int64_t images, float* out) {
  const int64_t p = g.p(), ld = images * p;
  for (int64_t f = 0; f < g.f; ++f) {
    for (int64_t i = 0; i < images; ++i) {
      std::memcpy(out + f * ld + i * p, dy + (i * g.f + f) * p, static_cast<size_t>(p) * sizeof(float));
    }
  }
}

}  // namespace

ConvPlan::ConvPlan(const ConvGeometry& g, ConvPass pass)
    : g_(g), pass_(pass), identity_col_(g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0) {
  SgemmSup::get();  // BLIS set-up errors surface here, at planning
  if (DirectConv::applies(g)) direct_.emplace(g);
}

int64_t ConvPlan::images_per_gemm() const {
  if (pass_ != ConvPass::GradWeight) return 1;
  return std::clamp<int64_t>((kConvMinDepth + g_.p() - 1) / g_.p(), 1, g_.n);
}

int64_t ConvPlan::scratch_bytes() const {
  if (direct_) {
    const int64_t floats = pass_ == ConvPass::Forward     ? direct_->forward_scratch_floats()
                           : pass_ == ConvPass::GradInput ? direct_->grad_input_scratch_floats()
                                                          : direct_->grad_weight_scratch_floats();
    return floats * static_cast<int64_t>(sizeof(float));
  }
  const int64_t images = images_per_gemm();
  const int64_t col = identity_col_ && images == 1 ? 0 : g_.k() * images * g_.p();
  const int64_t gathered = images > 1 ? g_.f * images * g_.p() : 0;
  return (col + gathered) * static_cast<int64_t>(sizeof(float));
}

std::string ConvPlan::description() const {
  if (direct_) {
    if (direct_->isa() == DirectIsa::Avx512) {
      return std::string("direct AVX-512, ") +
             (pass_ == ConvPass::Forward     ? "up to 6 filters x 4-7 pairs of 8 pixels per tile"
              : pass_ == ConvPass::GradInput ? "up to 6 (tap, channel) rows x 4-8 pairs of 8 pixels per tile"
                                             : "up to 4 filters x 6 taps x 16 lanes per tile");
    }
    return std::string("direct AVX2, ") + (pass_ == ConvPass::Forward     ? "6 filters x 16 pixels per tile"
                                           : pass_ == ConvPass::GradInput ? "6 (tap, channel) rows x 16 pixels per tile"
                                                                          : "3 filters x 4 taps x 8 lanes per tile");
  }
  return SgemmSup::get().description() + ", " + std::to_string(images_per_gemm()) + " image(s) per GEMM";
}

void ConvPlan::forward(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu) const {
  forward_images(x, w, b, y, scratch, relu, 0, g_.n);
}

void ConvPlan::forward_images(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu,
                              int64_t n0, int64_t count) const {
  if (direct_) {
    direct_->forward_images(x, w, b, y, scratch, relu, n0, count);
    return;
  }
  const SgemmSup& sup = SgemmSup::get();
  const int64_t k = g_.k(), p = g_.p();
  for (int64_t n = n0; n < n0 + count; ++n) {
    const float* xn = x + n * g_.image();
    float* yn = y + (n - n0) * g_.out_image();
    if (!identity_col_) im2col(g_, xn, scratch, p);
    for (int64_t f = 0; b && f < g_.f; ++f) std::fill(yn + f * p, yn + (f + 1) * p, b[f]);
    sup.run(g_.f, p, k, w, k, 1, identity_col_ ? xn : scratch, p, 1, b ? 1.0f : 0.0f, yn, p);
    if (relu) relu_in_place(yn, g_.out_image());
  }
}

void ConvPlan::grad_input(const float* dy, const float* w, float* dx, float* scratch) const {
  if (direct_) {
    direct_->grad_input(dy, w, dx, scratch);
    return;
  }
  const SgemmSup& sup = SgemmSup::get();
  const int64_t k = g_.k(), p = g_.p();
  for (int64_t n = 0; n < g_.n; ++n) {
    float* dxn = dx + n * g_.image();
    // dcol = W^T [K, F] (element (r, f) at w[f*K + r]) @ dy[n] [F, P]
    sup.run(k, p, g_.f, w, 1, k, dy + n * g_.out_image(), p, 1, 0.0f, identity_col_ ? dxn : scratch, p);
    if (identity_col_) continue;
    std::fill(dxn, dxn + g_.image(), 0.0f);
    col2im(g_, scratch, p, dxn);
  }
}

int64_t ConvPlan::grad_weight_images() const { return direct_ ? direct_->grad_weight_images() : images_per_gemm(); }

void ConvPlan::grad_weight(const float* x, const float* dy, float* dw, float* scratch) const {
  const int64_t chunk = grad_weight_images();
  for (int64_t n0 = 0; n0 < g_.n; n0 += chunk) {
    grad_weight_add(x + n0 * g_.image(), dy + n0 * g_.out_image(), n0, std::min(chunk, g_.n - n0), dw, scratch);
  }
  grad_weight_end(dw, scratch);
}

void ConvPlan::grad_weight_add(const float* x, const float* dy, int64_t n0, int64_t images, float* dw,
                               float* scratch) const {
  if (direct_) {
    direct_->grad_weight_add(x, dy, n0, images, scratch);
    return;
  }
  const SgemmSup& sup = SgemmSup::get();
  const int64_t k = g_.k(), p = g_.p(), ld = images * p;
  const float* col = x;  // identity_col_ with one image per GEMM
  if (!identity_col_ || images_per_gemm() > 1) {
    for (int64_t i = 0; i < images; ++i) im2col(g_, x + i * g_.image(), scratch + i * p, ld);
    col = scratch;
  }
  const float* a = dy;
  if (images_per_gemm() > 1) {
    float* gathered = scratch + k * images_per_gemm() * p;
    gather_images(g_, dy, images, gathered);
    a = gathered;
  }
  // dW [F, K] (+)= dy [F, ld] @ col^T: B's element (q, r) = col[r * ld + q]
  sup.run(g_.f, k, ld, a, ld, 1, col, 1, ld, n0 == 0 ? 0.0f : 1.0f, dw, k);
}

void ConvPlan::grad_weight_end(float* dw, const float* scratch) const {
  if (direct_) direct_->grad_weight_end(dw, scratch);
}

}  // namespace plexus::ops
