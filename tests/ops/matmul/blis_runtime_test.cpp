// Runs once per BLIS_ARCH_TYPE setting (see CMakeLists.txt: the same binary is registered
// with several environments) and checks Plexus's reaction to each: unset -> measured
// choice among the best kernel sets this CPU runs; a valid id -> only that set; ids BLIS
// would abort on or silently reinterpret, or kernels this CPU cannot execute -> a clear
// Unsupported error, never a crash.
#include "core/ops/matmul/blis_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/ir/error.h"
#include "core/ir/graph.h"
#include "core/ops/matmul/gemm.h"
#include "core/session/session.h"

namespace plexus::ops {
namespace {

using ::testing::HasSubstr;

std::string env() {
  const char* v = std::getenv("BLIS_ARCH_TYPE");
  return v ? v : "";
}

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

// The error expected for this BLIS_ARCH_TYPE, or "" when it is acceptable here.
std::string expected_error() {
  const std::string v = env();
  if (v == "99" || v == "13") return "is not a kernel set of this BLIS build";
  if (v == "zen3") return "is not a number";
  if (v == "0" && !has_avx512()) return "instructions this CPU does not have";
  return "";
}

ir::Graph matmul_graph() {
  ir::Graph g;
  const ir::TensorId a = g.add_variable("a", ir::DType::Float32, {2, 2}, std::vector<std::byte>(16));
  g.add_op("matmul", {a, a}, {});
  return g;
}

TEST(BlisRuntime, HonoursBlisArchType) {
  const std::string error = expected_error();
  const BlisInfo info = blis_info();
  if (!error.empty()) {
    EXPECT_THAT(info.selection, HasSubstr(error));
    try {
      blis_candidates();
      FAIL() << "no error for BLIS_ARCH_TYPE=" << env();
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), ir::ErrorCode::Unsupported);
      EXPECT_THAT(e.what(), HasSubstr("BLIS_ARCH_TYPE"));
      EXPECT_THAT(e.what(), HasSubstr(error));
    }
    // A session needing a GEMM fails the same way (the C API turns it into PLX_ERR_UNSUPPORTED).
    EXPECT_THROW(session::Session(matmul_graph(), {}), ir::Error);
    return;
  }
  const std::vector<BlisArch>& candidates = blis_candidates();
  ASSERT_FALSE(candidates.empty());
  EXPECT_FALSE(info.version.empty());
  EXPECT_FALSE(info.blis_default.empty());
  const std::string v = env();
  if (v.empty() || v == "-1") {
    EXPECT_EQ(info.selection, "chosen per GEMM shape");
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      for (const BlisArch& a : candidates) {  // never generic or older kernels when AVX2 runs
        EXPECT_NE(a.name, "generic");
        EXPECT_NE(a.name, "sandybridge");
        EXPECT_NE(a.name, "penryn");
      }
    }
    if (has_avx512()) {
      EXPECT_EQ(candidates.front().name, "skx");
    }
  } else {
    ASSERT_EQ(candidates.size(), 1u);
    EXPECT_EQ(std::to_string(candidates.front().id), v);
    EXPECT_THAT(info.selection, HasSubstr("BLIS_ARCH_TYPE=" + v + " (" + candidates.front().name + ")"));
    EXPECT_EQ(Gemm::plan({4, 4, 4, false, false}, 1).choice().source, "BLIS_ARCH_TYPE");
  }
  session::Session session(matmul_graph(), {});  // and a GEMM session works
}

}  // namespace
}  // namespace plexus::ops
