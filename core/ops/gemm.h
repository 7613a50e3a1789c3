// Single-precision GEMM through BLIS's expert interface, with the kernel set and thread
// count chosen per GEMM shape when a plan is made (docs/design.md, "Platform facts": no single
// BLIS sub-configuration wins every shape, so Plexus measures the candidates on the
// actual shape instead of trusting one global choice).
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

/// What the plan chose and why: kernel set, threads, and the measured speed.
struct GemmChoice {
  std::string arch;     ///< BLIS sub-configuration name
  int threads = 1;      ///< threads: C is cut into min(threads, max(m, n) / 32) panels, one BLIS call each
  double gflops = 0.0;  ///< measured at plan time on this shape (0 when not measured)
  std::string source;   ///< "measured" or "BLIS_ARCH_TYPE"
};

/// A GEMM planned for one shape. Cheap to copy. run() is thread-safe and allocates nothing
/// on the heap once the helper threads have started (BLIS's packing-buffer pool is
/// internal to BLIS); with threads > 1 it takes the helpers' mutexes (gemm_parts.h).
class Gemm {
 public:
  /// Chooses the fastest (kernel set, threads) for `shape` with at most `max_threads`
  /// threads, by timing each candidate on the shape; choices are cached per process, so
  /// every session of a process uses the same kernels for the same shape (deterministic
  /// results). A candidate within 10% of the fastest that BLIS itself would pick wins, so that noise
  /// in the timing rarely changes the choice between processes.
  /// Throws ir::Error(Unsupported) on a bad BLIS_ARCH_TYPE (see blis_runtime.h).
  static Gemm plan(const GemmShape& shape, int max_threads);

  /// C = alpha op(A) op(B) + beta C with the chosen kernel set. With threads > 1, the
  /// larger of C's dimensions is cut into up to that many panels (edges at multiples of 32
  /// rows or columns, at most one panel per 32), each a single-threaded BLIS call, run on
  /// the calling thread and the process's helper threads (gemm_parts.h), which sleep
  /// instead of spinning when they wait.
  void run(const float* a, const float* b, float* c, float alpha, float beta) const;
  /// This plan with `threads` (>= 1) threads instead of the chosen count (tests and
  /// benchmarks comparing thread counts on one kernel set).
  Gemm with_threads(int threads) const;
  const GemmShape& shape() const { return shape_; }
  const GemmChoice& choice() const { return choice_; }

 private:
  GemmShape shape_;
  GemmChoice choice_;
  const void* context_ = nullptr;
};

}  // namespace plexus::ops
