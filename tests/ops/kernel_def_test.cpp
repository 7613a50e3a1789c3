// The kernel registry (core/ops/kernel_def.cpp) and OpRegistration (core/ops/op_def.cpp):
// lookup by op type, registration once per type, an op family's def split into its schema
// and its kernel, the scratch and in-place rules read through ops::scratch_bytes and
// ops::may_inplace, and compile refusing an op type with a schema and no kernel, naming it.
// Its own binary (tests_ops_kernels): the schema-only op it registers would otherwise be an
// untested op without a kernel to all_ops_test.
#include "core/ops/kernel_def.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/compile/passes.h"
#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "tests/error_of.h"

namespace plexus::ops {
namespace {

using ::testing::HasSubstr;
using test::error_of;

constexpr const char* kSchemaOnly = "kernel_def_test_schema_only";
constexpr const char* kBoth = "kernel_def_test_copy";

ir::InferResult same_as_input(const ir::InferContext& ctx) { return {{{ctx.dtype(0), ctx.shape(0)}}}; }

ir::OpSchema schema_only() {
  ir::OpSchema s;
  s.name = kSchemaOnly;
  s.infer = same_as_input;
  return s;
}

/// A copy whose kernel asks for scratch of twice its input and may write over input 0.
OpDef copy_def() {
  OpDef d;
  d.name = kBoth;
  d.infer = same_as_input;
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    return [x = ctx.in[0], y = ctx.out[0], bytes = ctx.inputs[0]->bytes()] { std::memmove(y, x, bytes); };
  };
  d.scratch = [](const ir::InferContext& ctx) { return 2 * ctx.inputs[0]->bytes(); };
  d.may_inplace = [](const ir::InferContext&) { return 0; };
  return d;
}

const ir::SchemaRegistration schema_only_op{schema_only()};
const OpRegistration copy_op{copy_def()};

ir::TensorId input(ir::Graph& g, const std::string& name, const ir::Shape& shape) {
  return g.stream(g.add_h2d_stream(name, ir::DType::Float32, shape)).tensor;
}

TEST(KernelRegistry, FindsKernelsByOpTypeAndReturnsNullForOthers) {
  const KernelRegistry& registry = KernelRegistry::instance();
  ASSERT_NE(registry.find("matmul"), nullptr);
  EXPECT_TRUE(registry.find("matmul")->kernel);
  EXPECT_FALSE(registry.find("relu")->scratch) << "relu needs no scratch";
  EXPECT_TRUE(registry.find("matmul")->scratch) << "matmul has float16 copies to place";
  EXPECT_TRUE(registry.find("conv2d")->scratch);
  EXPECT_TRUE(registry.find("max_pool2d_grad")->may_inplace);
  EXPECT_TRUE(registry.find("replicated_all_reduce_bucket")->span_inputs);
  EXPECT_FALSE(registry.find("replicated_all_reduce")->span_inputs);
  EXPECT_EQ(registry.find("matmull"), nullptr);
  EXPECT_EQ(registry.find(kSchemaOnly), nullptr) << "a schema alone registers no kernel";
  const std::vector<std::string> names = registry.names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

TEST(KernelRegistry, AKernelIsRegisteredOnceAndHasAFactory) {
  const KernelDef* matmul = KernelRegistry::instance().find("matmul");
  KernelDef twin;
  twin.kernel = [](const KernelContext&) { return Kernel{}; };
  const ir::Error e = error_of([&] { KernelRegistry::instance().add("matmul", twin); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Internal);
  EXPECT_THAT(e.what(), HasSubstr("the kernel of op 'matmul' is registered twice"));
  EXPECT_EQ(KernelRegistry::instance().find("matmul"), matmul) << "the first one stays";
  const ir::Error empty = error_of([] { KernelRegistry::instance().add("kernel_def_test_empty", KernelDef{}); });
  EXPECT_THAT(empty.what(), HasSubstr("the kernel of op 'kernel_def_test_empty' has no factory"));
  EXPECT_EQ(KernelRegistry::instance().find("kernel_def_test_empty"), nullptr);
}

TEST(OpRegistration, SplitsADefIntoItsSchemaAndItsKernel) {
  const ir::OpSchema* schema = ir::OpSchemaRegistry::instance().find(kBoth);
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->name, kBoth);
  ASSERT_NE(KernelRegistry::instance().find(kBoth), nullptr);
  ir::Graph g;
  const ir::TensorId y = g.add_op(kBoth, {input(g, "x", {2, 3})}, {}).front();
  const ir::Op& op = g.op(g.tensor(y).producer);
  EXPECT_EQ(op.schema, schema);
  EXPECT_EQ(&kernel_def(op), KernelRegistry::instance().find(kBoth));
  EXPECT_EQ(scratch_bytes(g, op), 2u * 6 * 4) << "the rule sees the op's input types";
  EXPECT_EQ(may_inplace(g, op), 0);
}

TEST(KernelDef, ScratchAndMayInplaceDefaultToNoneAndFollowTheOpsRules) {
  ir::Graph g;
  const ir::TensorId x = input(g, "x", {1, 1, 4, 4});
  const ir::TensorId relu = g.add_op("relu", {x}, {}).front();
  EXPECT_EQ(scratch_bytes(g, g.op(g.tensor(relu).producer)), 0u);
  EXPECT_EQ(may_inplace(g, g.op(g.tensor(relu).producer)), -1);
  ir::Attributes tiled, overlapping;
  tiled.set("kernel", std::vector<int64_t>{2, 2});
  overlapping.set("kernel", std::vector<int64_t>{3, 3});
  overlapping.set("stride", std::vector<int64_t>{1, 1});
  const ir::TensorId dx_tiled = g.add_op("max_pool2d_grad", {x, input(g, "dy", {1, 1, 2, 2})}, tiled).front();
  const ir::TensorId dx_overlapping =
      g.add_op("max_pool2d_grad", {x, input(g, "dy3", {1, 1, 2, 2})}, overlapping).front();
  EXPECT_EQ(may_inplace(g, g.op(g.tensor(dx_tiled).producer)), 0) << "tiled windows read x before dx is written";
  EXPECT_EQ(may_inplace(g, g.op(g.tensor(dx_overlapping).producer)), -1);
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {3, 1, 3, 3}, std::vector<std::byte>(108));
  const ir::TensorId conv = g.add_op("conv2d", {x, w}, {}).front();
  EXPECT_GT(scratch_bytes(g, g.op(g.tensor(conv).producer)), 0u);
}

TEST(KernelDef, ASchemaWithoutAKernelIsRefusedAtCompileNamingItsType) {
  ir::Graph g;
  const ir::TensorId y = g.add_op(kSchemaOnly, {input(g, "x", {4})}, {}).front();  // the IR takes it
  g.add_d2h_stream("y", y);
  const ir::Error lookup = error_of([&] { kernel_def(g.op(g.tensor(y).producer)); });
  EXPECT_EQ(lookup.code(), ir::ErrorCode::Unsupported);
  compile::Compilation c{g, {}, {}, {}, 1, {}, {}};
  const ir::Error e = error_of([&] { compile::run_passes(c); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), HasSubstr("op type 'kernel_def_test_schema_only' has a schema but no kernel"));
  EXPECT_THAT(e.what(), HasSubstr("op 'kernel_def_test_schema_only#0'"));
}

}  // namespace
}  // namespace plexus::ops
