#include "core/ops/matmul/gemm.h"

#include <blis.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/ops/matmul/blis_runtime.h"
#include "core/ops/matmul/gemm_parts.h"

namespace plexus::ops {

namespace {

// Leading dimensions of the full row-major matrices (a sub-matrix keeps its parent's).
struct Strides {
  inc_t lda, ldb, ldc;
};

Strides strides_of(const GemmShape& s) { return {s.trans_a ? s.m : s.k, s.trans_b ? s.k : s.n, s.n}; }

// One single-threaded BLIS call.
void run_blis(const GemmShape& s, const Strides& ld, const void* context, const float* a, const float* b, float* c,
              float alpha, float beta) {
  rntm_t rntm;
  bli_rntm_init(&rntm);
  bli_rntm_set_num_threads(1, &rntm);
  // Row-major storage: row stride = leading dimension, column stride = 1.
  bli_sgemm_ex(s.trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s.trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s.m,
               s.n, s.k, &alpha, const_cast<float*>(a), ld.lda, 1, const_cast<float*>(b), ld.ldb, 1, &beta, c, ld.ldc,
               1, static_cast<cntx_t*>(const_cast<void*>(context)), &rntm);
}

// Panel edges fall on multiples of this many rows or columns of C (whole cache lines of a
// row of C; whole micro-tiles for the kernel sets whose tiles are 16 or 32 wide), and a
// GEMM gets at most one panel per this many rows or columns.
constexpr int64_t kPanelAlign = 32;

// Edge p of `parts` panels over [0, extent): extent * p / parts rounded to the nearest
// multiple of kPanelAlign. With parts <= extent / kPanelAlign the edges are at least
// kPanelAlign apart before rounding, so no panel is empty.
int64_t panel_edge(int64_t extent, int parts, int p) {
  if (p == parts) return extent;
  const int64_t even = extent * p / parts;
  return std::min(extent, (even + kPanelAlign / 2) / kPanelAlign * kPanelAlign);
}

// What each panel of one run_gemm() needs.
struct Panels {
  const GemmShape& s;
  Strides ld;
  const void* context;
  const float *a, *b;
  float* c;
  float alpha, beta;
  bool rows;  // panels of rows of C (else of columns)
  int64_t extent;
  int parts;

  void operator()(int p) const {
    const int64_t begin = panel_edge(extent, parts, p), end = panel_edge(extent, parts, p + 1);
    if (begin >= end) return;
    GemmShape panel = s;
    if (rows) {
      panel.m = end - begin;
      run_blis(panel, ld, context, a + (s.trans_a ? begin : begin * ld.lda), b, c + begin * ld.ldc, alpha, beta);
    } else {
      panel.n = end - begin;
      run_blis(panel, ld, context, a, b + (s.trans_b ? begin * ld.ldb : begin), c + begin, alpha, beta);
    }
  }
};

// C = alpha op(A) op(B) + beta C on up to `threads` cores: the larger of C's dimensions is
// cut into panels, each one single-threaded BLIS call on its own thread (gemm_parts.h).
void run_gemm(const GemmShape& s, const void* context, int threads, const float* a, const float* b, float* c,
              float alpha, float beta) {
  const bool rows = s.m >= s.n;
  const int64_t extent = rows ? s.m : s.n;
  const int parts = static_cast<int>(std::clamp<int64_t>(extent / kPanelAlign, 1, std::max(1, threads)));
  if (parts == 1) {
    run_blis(s, strides_of(s), context, a, b, c, alpha, beta);
    return;
  }
  Panels panels{s, strides_of(s), context, a, b, c, alpha, beta, rows, extent, parts};
  run_parts(parts, panels);
}

// GFLOP/s of the kernel sets, 1 thread, on a grid of shapes (m, n in 8..2048, k in
// 10..2048; docs/design.md, "Platform facts"): skx (AVX-512, 32x12 tiles) wins once C has
// at least 64 rows and 128 columns with k >= 32, or 32 rows and 512 columns; below that the
// AVX2 sets (6x16 tiles) win, zen3 the most often. The rule reaches 0.98 of the best set
// (geometric mean over the grid), with no shape below 0.64 of it.
bool wide_enough_for_skx(const GemmShape& s) {
  return (s.m >= 64 && s.n >= 128 && s.k >= 32) || (s.m >= 32 && s.n >= 512);
}

// The kernel set for `s`: a function of the CPU (through the candidates) and the shape only.
const BlisArch& choose_arch(const GemmShape& s, const std::vector<BlisArch>& candidates) {
  auto find = [&](std::string_view name) {
    return std::find_if(candidates.begin(), candidates.end(), [&](const BlisArch& a) { return a.name == name; });
  };
  if (wide_enough_for_skx(s)) {
    if (auto skx = find("skx"); skx != candidates.end()) return *skx;
  }
  for (std::string_view name : {"zen3", "haswell", "zen2", "zen"}) {
    if (auto set = find(name); set != candidates.end()) return *set;
  }
  return candidates.front();
}

// Panels pay for their hand-over once C = A B has at least this many floating-point
// operations and k is at least kMinThreadedK (measured on 2 cores: 1.1-2.2x from 8 MFLOP
// with k >= 64; 0.05-0.9x for most smaller products and for k = 10 or 32).
constexpr double kMinThreadedFlops = 8e6;
constexpr int64_t kMinThreadedK = 64;

int choose_threads(const GemmShape& s, int threads_cap) {
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  return flops >= kMinThreadedFlops && s.k >= kMinThreadedK ? threads_cap : 1;
}

}  // namespace

std::string GemmShape::to_string() const {
  return std::to_string(m) + (trans_a ? "^T" : "") + "x" + std::to_string(k) + "x" + std::to_string(n) +
         (trans_b ? "^T" : "");
}

Gemm Gemm::plan(const GemmShape& shape, int max_threads) {
  const BlisArch& arch = choose_arch(shape, blis_candidates());
  Gemm gemm;
  gemm.shape_ = shape;
  gemm.choice_ = GemmChoice{arch.name, choose_threads(shape, std::max(1, max_threads)),
                            blis_arch_forced() ? "BLIS_ARCH_TYPE" : "by shape"};
  gemm.context_ = arch.context;
  return gemm;
}

void Gemm::run(const float* a, const float* b, float* c, float alpha, float beta) const {
  run_gemm(shape_, context_, choice_.threads, a, b, c, alpha, beta);
}

Gemm Gemm::with_threads(int threads) const {
  Gemm gemm = *this;
  gemm.choice_.threads = std::max(1, threads);
  return gemm;
}

}  // namespace plexus::ops
