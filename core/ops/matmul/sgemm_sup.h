// BLIS's small/unpacked ("sup") single-precision GEMM kernels, called directly: they read
// A and B in place (no packing) and suit the small GEMMs of one image of a convolution
// (conv_gemm.h), where BLIS's own entry points would cost more per call than the product.
// These are the kernels BLIS 0.9 itself runs for such shapes (bli_gemmsup_ref_var2m), called
// the same way: a kernel loops over the rows of C itself and takes at most nr columns per call.
#pragma once

#include <cstdint>
#include <string>

namespace plexus::ops {

/// The sgemm sup kernels of one BLIS kernel set. A process-wide singleton; run() is
/// thread-safe and allocates nothing.
class SgemmSup {
 public:
  /// The kernels of the set BLIS_ARCH_TYPE names, else of BLIS's own pick when it has sup
  /// kernels, else of the first candidate of blis_candidates() that has them (skx has none
  /// in BLIS 0.9; the reference kernels, which take any size, serve when no candidate has
  /// any). One choice per process, never a timing, so results are reproducible. Throws
  /// ir::Error(Unsupported) on a bad BLIS_ARCH_TYPE (see blis_runtime.h).
  static const SgemmSup& get();

  /// C[m,n] = A[m,k] @ B[k,n] + beta * C, all float32, m, n, k >= 1. C is row-stored:
  /// element (i, j) at c[i * ldc + j]. A's element (i, p) is at a[i * rs_a + p * cs_a] and
  /// B's (p, j) at b[p * rs_b + j * cs_b]; A and B are each row- or column-stored (a unit
  /// stride), but not both column-stored (throws ir::Error(Internal)). beta 0 ignores C's
  /// old values. The same inputs give the same bits.
  void run(int64_t m, int64_t n, int64_t k, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t rs_b,
           int64_t cs_b, float beta, float* c, int64_t ldc) const;

  /// "zen3 sup 6x16" style summary, for reports.
  const std::string& description() const { return description_; }

 private:
  SgemmSup() = default;
  std::string description_;
  int64_t mr_ = 0, nr_ = 0;        // 0: the kernels take any size
  const void* rrr_ = nullptr;      // C, A, B row-stored
  const void* rrc_ = nullptr;      // B column-stored
  const void* rcr_ = nullptr;      // A column-stored
  const void* context_ = nullptr;  // BLIS cntx_t*
};

}  // namespace plexus::ops
