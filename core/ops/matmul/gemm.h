// Single-precision GEMM through BLIS's expert interface, with the kernel set and thread
// count chosen per GEMM shape when a plan is made (docs/design.md, "Platform facts": no single
// BLIS sub-configuration wins every shape). The choice is a rule of the CPU and the shape,
// never a timing, so that every run of a program gives the same bits.
#pragma once

#include <cstdint>
#include <string>

namespace plexus::ops {

/// Row-major C[m,n] = alpha * op(A) * op(B) + beta * C, op = transpose when the flag is set
/// (A is [m,k], or [k,m] when transposed; B is [k,n], or [n,k] when transposed).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::string to_string() const;  ///< "8x784x32" (m x k x n) plus "^T" marks
};

/// What the plan chose and why: kernel set and threads.
struct GemmChoice {
  std::string arch;    ///< BLIS sub-configuration name
  int threads = 1;     ///< threads: C is cut into min(threads, max(m, n) / 32) panels, one BLIS call each
  std::string source;  ///< "by shape" or "BLIS_ARCH_TYPE"
};

/// A GEMM planned for one shape. Cheap to copy. run() is thread-safe and allocates nothing
/// on the heap once the helper threads have started (BLIS's packing-buffer pool is
/// internal to BLIS); with threads > 1 it takes the helpers' mutexes (gemm_parts.h).
class Gemm {
 public:
  /// Chooses (kernel set, threads) for `shape` with at most `max_threads` threads by a
  /// fixed rule (gemm.cpp): skx for GEMMs wide enough for its 32x12 tiles when the CPU has
  /// AVX-512, else zen3 (or the best AVX2 set present), else the only candidate; all
  /// `max_threads` once the product is worth splitting (>= 8 MFLOP, k >= 64). The same
  /// shape and CPU give the same choice in every process, and the thread count never
  /// changes the result's bits (each element of C is one BLIS call's sum over all of k).
  /// Throws ir::Error(Unsupported) on a bad BLIS_ARCH_TYPE (see blis_runtime.h).
  static Gemm plan(const GemmShape& shape, int max_threads);

  /// C = alpha op(A) op(B) + beta C with the chosen kernel set. With threads > 1, the
  /// larger of C's dimensions is cut into up to that many panels (edges at multiples of 32
  /// rows or columns, at most one panel per 32), each a single-threaded BLIS call, run on
  /// the calling thread and the process's helper threads (gemm_parts.h), which sleep
  /// instead of spinning when they wait.
  void run(const float* a, const float* b, float* c, float alpha, float beta) const;
  /// This plan with `threads` (>= 1) threads instead of the chosen count (tests and
  /// benchmarks comparing thread counts on one kernel set; the bits stay the same).
  Gemm with_threads(int threads) const;
  const GemmShape& shape() const { return shape_; }
  const GemmChoice& choice() const { return choice_; }

 private:
  GemmShape shape_;
  GemmChoice choice_;
  const void* context_ = nullptr;
};

}  // namespace plexus::ops
