#include "core/ops/matmul/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "core/ops/matmul/blis_runtime.h"

namespace plexus::ops {
namespace {

// Naive row-major reference of C = op(A) op(B), in double.
std::vector<double> reference(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> c(static_cast<size_t>(s.m * s.n), 0.0);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t p = 0; p < s.k; ++p) {
        const float av = s.trans_a ? a[static_cast<size_t>(p * s.m + i)] : a[static_cast<size_t>(i * s.k + p)];
        const float bv = s.trans_b ? b[static_cast<size_t>(j * s.k + p)] : b[static_cast<size_t>(p * s.n + j)];
        c[static_cast<size_t>(i * s.n + j)] += static_cast<double>(av) * bv;
      }
  return c;
}

std::vector<float> random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

class GemmShapes : public ::testing::TestWithParam<GemmShape> {};

TEST_P(GemmShapes, ChosenKernelsComputeTheProductWithAlphaAndBeta) {
  const GemmShape s = GetParam();
  const Gemm gemm = Gemm::plan(s, 2);
  const auto a = random(static_cast<size_t>(s.m * s.k), 1), b = random(static_cast<size_t>(s.k * s.n), 2);
  std::vector<float> c(static_cast<size_t>(s.m * s.n), 1.0f);
  gemm.run(a.data(), b.data(), c.data(), 2.0f, 0.5f);  // C = 2 AB + 0.5 C
  const std::vector<double> ref = reference(s, a, b);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], 2.0 * ref[i] + 0.5, 1e-4 * static_cast<double>(s.k)) << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmShapes,
                         ::testing::Values(GemmShape{8, 32, 784, false, false}, GemmShape{8, 10, 32, false, false},
                                           GemmShape{784, 32, 8, true, false}, GemmShape{8, 32, 10, false, true},
                                           GemmShape{5, 7, 3, true, true}, GemmShape{1, 1, 1, false, false},
                                           GemmShape{40, 256, 320, false, false}),
                         [](const ::testing::TestParamInfo<GemmShape>& info) {
                           const GemmShape& s = info.param;
                           return "m" + std::to_string(s.m) + (s.trans_a ? "T" : "") + "k" + std::to_string(s.k) +
                                  "n" + std::to_string(s.n) + (s.trans_b ? "T" : "");
                         });

// Threads cut C into panels: rows when m >= n, else columns, each with its operands'
// offsets (transposed or not); uneven and too-narrow extents included (fewer panels than
// threads when C is narrower than 32 per thread).
TEST(Gemm, EveryPanelSplitComputesTheProductForEachTransposition) {
  for (const GemmShape base : {GemmShape{100, 20, 37}, GemmShape{20, 130, 37}, GemmShape{40, 40, 9},
                               GemmShape{300, 200, 150}}) {
    for (int t = 0; t < 4; ++t) {
      GemmShape s = base;
      s.trans_a = (t & 1) != 0;
      s.trans_b = (t & 2) != 0;
      const auto a = random(static_cast<size_t>(s.m * s.k), 3), b = random(static_cast<size_t>(s.k * s.n), 4);
      const std::vector<double> ref = reference(s, a, b);
      std::vector<float> one_thread;
      for (int threads : {1, 2, 3, 5}) {
        std::vector<float> c(static_cast<size_t>(s.m * s.n), 1.0f);
        Gemm::plan(s, 1).with_threads(threads).run(a.data(), b.data(), c.data(), 2.0f, 0.5f);
        for (size_t i = 0; i < c.size(); ++i) {
          ASSERT_NEAR(c[i], 2.0 * ref[i] + 0.5, 1e-4 * static_cast<double>(s.k))
              << s.to_string() << " threads " << threads << " element " << i;
        }
        if (threads == 1) one_thread = c;
        EXPECT_EQ(0, std::memcmp(c.data(), one_thread.data(), c.size() * sizeof(float)))
            << s.to_string() << ": " << threads << " threads changed the bits";
      }
    }
  }
}

// The rule of gemm.cpp runs unless the user forced a kernel set (blis_runtime_test covers that).
bool kernel_set_forced() {
  const char* v = std::getenv("BLIS_ARCH_TYPE");
  return v != nullptr && *v != '\0' && std::string(v) != "-1";
}

TEST(Gemm, ChoiceIsACandidateAndTheSameForTheSameShape) {
  if (kernel_set_forced()) GTEST_SKIP() << "BLIS_ARCH_TYPE is set";
  const GemmShape s{16, 16, 16, false, false};
  const Gemm first = Gemm::plan(s, 2);
  const Gemm second = Gemm::plan(s, 2);
  const std::vector<BlisArch>& candidates = blis_candidates();
  EXPECT_TRUE(std::any_of(candidates.begin(), candidates.end(),
                          [&](const BlisArch& a) { return a.name == first.choice().arch; }));
  EXPECT_EQ(first.choice().arch, second.choice().arch);
  EXPECT_EQ(first.choice().source, "by shape");
  EXPECT_EQ(first.shape().to_string(), "16x16x16");
}

// The rule of gemm.cpp, on this CPU: the AVX2 kernels (zen3) for narrow products, skx's for
// wide ones when the CPU has AVX-512; all the threads only from 8 MFLOP with k >= 64.
TEST(Gemm, KernelSetAndThreadsFollowTheShape) {
  if (kernel_set_forced()) GTEST_SKIP() << "BLIS_ARCH_TYPE is set";
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const Gemm narrow = Gemm::plan({8, 32, 784, false, false}, 4);  // MNIST's first layer, batch 8
  const Gemm wide = Gemm::plan({1024, 1024, 1024, false, false}, 4);
  if (avx2) {
    EXPECT_EQ(narrow.choice().arch, "zen3");
  }
  EXPECT_EQ(wide.choice().arch, avx512 ? "skx" : narrow.choice().arch);
  EXPECT_EQ(narrow.choice().threads, 1);
  EXPECT_EQ(wide.choice().threads, 4);
  EXPECT_EQ(Gemm::plan({100, 100, 1000, false, false}, 3).choice().threads, 3);  // 20 MFLOP
  EXPECT_EQ(Gemm::plan({1000, 1000, 32, false, false}, 3).choice().threads, 1);  // k too short
  EXPECT_EQ(Gemm::plan({100, 100, 100, false, false}, 3).choice().threads, 1);   // 2 MFLOP
}

}  // namespace
}  // namespace plexus::ops
