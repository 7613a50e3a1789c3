#include "core/ops/gemm.h"

#include <blis.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/ops/blis_runtime.h"
#include "core/ops/gemm_parts.h"

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

// Best of three timed rounds, each at least ~0.2 ms long, after one warm-up call.
double measure_gflops(const GemmShape& s, const BlisArch& arch, int threads) {
  std::vector<float> a(static_cast<size_t>(s.m * s.k), 0.5f), b(static_cast<size_t>(s.k * s.n), 0.25f),
      c(static_cast<size_t>(s.m * s.n), 0.0f);
  using Clock = std::chrono::steady_clock;
  run_gemm(s, arch.context, threads, a.data(), b.data(), c.data(), 1.0f, 0.0f);
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    int calls = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    do {
      run_gemm(s, arch.context, threads, a.data(), b.data(), c.data(), 1.0f, 0.0f);
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < 2e-4);
    best = std::min(best, elapsed / calls);
  }
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) / best * 1e-9;
}

struct Planned {
  GemmChoice choice;
  const void* context;
};

using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int>;

}  // namespace

std::string GemmShape::to_string() const {
  return std::to_string(m) + (trans_a ? "^T" : "") + "x" + std::to_string(k) + "x" + std::to_string(n) +
         (trans_b ? "^T" : "");
}

Gemm Gemm::plan(const GemmShape& shape, int max_threads) {
  static std::mutex mutex;
  static std::map<Key, Planned> cache;
  const std::vector<BlisArch>& candidates = blis_candidates();
  const int threads_cap = std::max(1, max_threads);
  const Key key{shape.m, shape.n, shape.k, shape.trans_a, shape.trans_b, threads_cap};

  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const std::string preferred = blis_info().blis_default;
    struct Trial {
      const BlisArch* arch;
      int threads;
      double gflops;
    };
    std::vector<Trial> trials;
    std::vector<int> thread_counts{1};
    if (threads_cap > 1) thread_counts.push_back(threads_cap);
    for (const BlisArch& arch : candidates) {
      for (int threads : thread_counts) trials.push_back({&arch, threads, measure_gflops(shape, arch, threads)});
    }
    const Trial* best = &trials.front();
    for (const Trial& t : trials) {
      if (t.gflops > best->gflops) best = &t;
    }
    for (const Trial& t : trials) {  // tie-break towards BLIS's own pick, single-threaded first
      if (t.arch->name == preferred && t.gflops >= 0.90 * best->gflops && t.threads <= best->threads) {
        best = &t;
        break;
      }
    }
    const bool forced = blis_info().selection.rfind("BLIS_ARCH_TYPE", 0) == 0;
    Planned planned{GemmChoice{best->arch->name, best->threads, best->gflops, forced ? "BLIS_ARCH_TYPE" : "measured"},
                    best->arch->context};
    it = cache.emplace(key, planned).first;
  }
  Gemm gemm;
  gemm.shape_ = shape;
  gemm.choice_ = it->second.choice;
  gemm.context_ = it->second.context;
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
