// The direct conv kernels (core/ops/conv/conv_direct.h) called on their own, with each
// instruction set this CPU runs (AVX2; AVX-512 where the CPU has F, VL and DQ), against
// double loops, on shapes that take their edge cases: output widths with a masked last
// vector (OW % 8 != 0) or an odd number of 8-pixel vectors per image (a 0-lane padding
// vector), widths under 8, channel and filter counts that are not multiples of 4, 6 or 16,
// 1x1 and non-square kernels, one image, tiny images. Every buffer ends at an inaccessible
// page, so that reads past a tensor fault.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/ops/conv/conv_direct.h"

namespace plexus::ops {
namespace {

/// A stride-1, unpadded geometry from x [N,C,H,W] and w [F,C,KH,KW].
ConvGeometry geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh, int64_t kw) {
  ConvGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.f = f, g.kh = kh, g.kw = kw;
  g.oh = h - kh + 1, g.ow = w - kw + 1;
  return g;
}

std::vector<float> random_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

/// Calls term(x index, w index, y index) for every product of the conv, in double loops.
template <class Term>
void for_each_term(const ConvGeometry& g, Term term) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t f = 0; f < g.f; ++f)
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j)
            for (int64_t oh = 0; oh < g.oh; ++oh)
              for (int64_t ow = 0; ow < g.ow; ++ow) {
                term(((n * g.c + c) * g.h + oh + i) * g.w + ow + j, ((f * g.c + c) * g.kh + i) * g.kw + j,
                     ((n * g.f + f) * g.oh + oh) * g.ow + ow);
              }
}

/// Each value within 1e-5 + 1e-5 * |expected| of the double reference.
void expect_near(const std::vector<float>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < actual.size(); ++k) {
    ASSERT_NEAR(actual[k], expected[k], 1e-5 + 1e-5 * std::fabs(expected[k])) << what << " at " << k;
  }
}

/// Floats that end where an inaccessible page begins: a kernel that reads or writes past
/// them faults (the AVX-512 kernels' reads past a row's end must stay inside the tensor).
class Guarded {
 public:
  explicit Guarded(size_t count, float value = 0.0f) : count_(count) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = count * sizeof(float);
    size_ = (bytes + page - 1) / page * page + page;
    base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(static_cast<char*>(base_) + size_ - page, page, PROT_NONE), 0);
    data_ = reinterpret_cast<float*>(static_cast<char*>(base_) + size_ - page - bytes);
    std::fill(data_, data_ + count, value);
  }
  explicit Guarded(const std::vector<float>& values) : Guarded(values.size()) {
    std::copy(values.begin(), values.end(), data_);
  }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  ~Guarded() { munmap(base_, size_); }

  float* data() { return data_; }
  std::vector<float> values() const { return {data_, data_ + count_}; }

 private:
  size_t count_, size_;
  void* base_;
  float* data_;
};

/// The instruction sets this CPU runs.
/// The relu epilogue's y is relu of the plain y, bit for bit (+0 where that is <= 0).
void expect_relu_of(const std::vector<float>& fused, const std::vector<float>& plain) {
  ASSERT_EQ(fused.size(), plain.size());
  int positive = 0;
  for (size_t k = 0; k < plain.size(); ++k) {
    const float want = plain[k] > 0.0f ? plain[k] : 0.0f;
    positive += plain[k] > 0.0f;
    ASSERT_EQ(std::bit_cast<uint32_t>(fused[k]), std::bit_cast<uint32_t>(want)) << "relu epilogue, element " << k;
  }
  EXPECT_GT(positive, 0);
  EXPECT_LT(positive, static_cast<int>(plain.size()));
}

std::vector<DirectIsa> isas() {
  std::vector<DirectIsa> out{DirectIsa::Avx2};
  if (DirectConv::best_isa() == DirectIsa::Avx512) out.push_back(DirectIsa::Avx512);
  return out;
}

struct Shape {
  int64_t n, c, h, w, f, kh, kw;
};

const Shape kShapes[] = {
    {2, 3, 9, 17, 7, 3, 3},    // OW 15: one full and one 7-lane vector per row, odd count
    {1, 1, 28, 28, 10, 5, 5},  // seed 003's first layer, one image
    {2, 10, 12, 12, 20, 5, 5}, // seed 003's second layer: OW 8, pairs of rows
    {1, 17, 6, 30, 5, 2, 3},   // 17 channels, OW 28, 5 rows x 4 vectors, non-square kernel
    {3, 2, 5, 4, 9, 1, 1},     // 1x1 kernel, OW 4 < 8
    {2, 1, 28, 28, 32, 3, 3},  // seed 002's layer: OW 26, 2-lane last vectors
    {2, 5, 7, 11, 3, 4, 2},    // 5 channels x 4 row taps per column tap
    {4, 1, 2, 3, 2, 2, 2},     // 6-float images: reads past one run past x unless masked
};

std::string name(const Shape& s, DirectIsa isa) {
  return std::string(isa == DirectIsa::Avx512 ? "AVX-512" : "AVX2") + " x [" + std::to_string(s.n) + "," +
         std::to_string(s.c) + "," + std::to_string(s.h) + "," + std::to_string(s.w) + "] w [" + std::to_string(s.f) +
         "," + std::to_string(s.c) + "," + std::to_string(s.kh) + "," + std::to_string(s.kw) + "]";
}

TEST(DirectConv, EveryPassMatchesDoubleReferenceOnEachInstructionSet) {
  if (!DirectConv::applies(geometry(1, 1, 1, 1, 1, 1, 1))) GTEST_SKIP() << "no AVX2 + FMA";
  for (const Shape& s : kShapes) {
    const ConvGeometry g = geometry(s.n, s.c, s.h, s.w, s.f, s.kh, s.kw);
    const std::vector<float> x = random_values(g.n * g.image(), 1), w = random_values(g.f * g.k(), 2),
                             b = random_values(g.f, 3), dy = random_values(g.n * g.out_image(), 4);
    std::vector<double> y(dy.size()), dx(x.size()), dw(w.size());
    for (size_t k = 0; k < y.size(); ++k) y[k] = b[k / static_cast<size_t>(g.p()) % static_cast<size_t>(g.f)];
    for_each_term(g, [&](int64_t xi, int64_t wi, int64_t yi) {
      y[yi] += double{w[wi]} * x[xi];
      dx[xi] += double{w[wi]} * dy[yi];
      dw[wi] += double{x[xi]} * dy[yi];
    });
    for (const DirectIsa isa : isas()) {
      SCOPED_TRACE(name(s, isa));
      const DirectConv conv(g, isa);
      ASSERT_EQ(conv.isa(), isa);
      Guarded gx(x), gw(w), gb(b), gdy(dy), out_y(y.size()), out_dx(dx.size(), 7.0f), out_dw(dw.size());
      Guarded scratch(static_cast<size_t>(std::max(
          {conv.forward_scratch_floats(), conv.grad_input_scratch_floats(), conv.grad_weight_scratch_floats()})));
      conv.forward(gx.data(), gw.data(), gb.data(), out_y.data(), scratch.data(), false);
      conv.grad_input(gdy.data(), gw.data(), out_dx.data(), scratch.data());
      conv.grad_weight(gx.data(), gdy.data(), out_dw.data(), scratch.data());
      expect_near(out_y.values(), y, "y");
      Guarded out_relu(y.size(), 7.0f);
      conv.forward(gx.data(), gw.data(), gb.data(), out_relu.data(), scratch.data(), true);
      expect_relu_of(out_relu.values(), out_y.values());
      expect_near(out_dx.values(), dx, "dx");
      // dw sums N*OH*OW products of values in [-1, 1): a looser absolute bound.
      const std::vector<float> got_dw = out_dw.values();
      for (size_t k = 0; k < dw.size(); ++k) ASSERT_NEAR(got_dw[k], dw[k], 1e-4 + 1e-5 * std::fabs(dw[k])) << k;
    }
  }
}

}  // namespace
}  // namespace plexus::ops
