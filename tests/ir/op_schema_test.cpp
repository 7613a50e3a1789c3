// The op schema registry (core/ir/op_schema.cpp): lookup by name, registration once per
// name, a schema alone making an op the IR can use, and the contexts shape inference and
// gradient rules see (their error messages name the op, its input types and the rule).
#include "core/ir/op_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "tests/error_of.h"

namespace plexus::ir {
namespace {

using ::testing::HasSubstr;
using test::error_of;

TEST(OpSchemaRegistry, FindsRegisteredOpsAndReturnsNullForOthers) {
  const OpSchema* matmul = OpSchemaRegistry::instance().find("matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->name, "matmul");
  EXPECT_EQ(matmul->min_inputs, 2u);
  const OpSchema* adamw = OpSchemaRegistry::instance().find("adamw_");
  ASSERT_NE(adamw, nullptr);
  EXPECT_EQ(adamw->gradient_input, 1);
  EXPECT_EQ(adamw->inplace_inputs, (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(OpSchemaRegistry::instance().find("matmull"), nullptr);
  EXPECT_EQ(OpSchemaRegistry::instance().find(""), nullptr);
}

TEST(OpSchemaRegistry, NamesAreSortedAndUnique) {
  const std::vector<std::string> names = OpSchemaRegistry::instance().names();
  EXPECT_GT(names.size(), 20u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "scaled_add_"), names.end());
}

TEST(OpSchemaRegistry, AnOpIsRegisteredOnce) {
  OpSchema twin;
  twin.name = "matmul";
  const Error e = error_of([&] { OpSchemaRegistry::instance().add(twin); });
  EXPECT_EQ(e.code(), ErrorCode::Internal);
  EXPECT_THAT(e.what(), HasSubstr("op 'matmul' is registered twice"));
  EXPECT_EQ(OpSchemaRegistry::instance().find("matmul")->min_inputs, 2u);  // the first one stays
}

TEST(OpSchemaRegistry, ARegisteredSchemaIsUsableByNameWithoutAKernel) {
  OpSchema d;
  d.name = "registry_test_double";
  d.infer = [](const InferContext& ctx) {
    ctx.expect_dtype(0, DType::Float32);
    return InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  static const SchemaRegistration registration{d};
  Graph g;
  const TensorId x = g.stream(g.add_h2d_stream("x", DType::Float32, {2, 3})).tensor;
  const TensorId y = g.add_op("registry_test_double", {x}, {}).front();
  EXPECT_EQ(g.tensor(y).shape, (Shape{2, 3}));
  EXPECT_EQ(g.op(g.tensor(y).producer).schema, OpSchemaRegistry::instance().find("registry_test_double"));
  const TensorId labels = g.stream(g.add_h2d_stream("labels", DType::Int32, {2})).tensor;
  const Error e = error_of([&] { g.add_op("registry_test_double", {labels}, {}); });
  EXPECT_EQ(e.code(), ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.what(), HasSubstr("op 'registry_test_double' with inputs (int32[2]): input 0 must be float32"));
}

TEST(InferContext, FailNamesTheOpEveryInputTypeAndTheRule) {
  TensorInfo a, b;
  a.dtype = DType::Float32;
  a.shape = {2, 3};
  b.dtype = DType::Int32;
  b.shape = {};
  const Attributes attrs;
  const InferContext ctx{"matmul#4", {&a, &b}, attrs, 1, nullptr};
  const Error e = error_of([&] { ctx.fail(ErrorCode::ShapeMismatch, "inner dims differ"); });
  EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
  EXPECT_STREQ(e.what(), "op 'matmul#4' with inputs (float32[2,3], int32[]): inner dims differ");
}

TEST(InferContext, ExpectNumericTakesFloat32AndInt32Only) {
  TensorInfo f, i, u;
  f.dtype = DType::Float32;
  i.dtype = DType::Int32;
  u.dtype = DType::Bool;
  const Attributes attrs;
  const InferContext ctx{"add#0", {&f, &i, &u}, attrs, 1, nullptr};
  ctx.expect_numeric(0);
  ctx.expect_numeric(1);
  const Error e = error_of([&] { ctx.expect_numeric(2); });
  EXPECT_EQ(e.code(), ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.what(), HasSubstr("input 2 must be a number (float32, float16, int32, int8, uint8 or uint32), not bool"));
  EXPECT_EQ(error_of([&] { ctx.expect_dtype(1, DType::Float32); }).code(), ErrorCode::DTypeMismatch);
}

TEST(GradContext, AddAppendsAnOpAndReportsShapesByValue) {
  Graph g;
  const TensorId x = g.stream(g.add_h2d_stream("x", DType::Float32, {4, 5})).tensor;
  g.add_op("relu", {x}, {});
  const Op forward = g.op(0);  // a copy: ctx.add grows the op list
  GradContext ctx{g, forward, {x}, {true}};
  const size_t ops_before = g.num_ops();
  const TensorId y = ctx.add("relu", {x});
  EXPECT_EQ(g.num_ops(), ops_before + 1);
  EXPECT_EQ(ctx.shape(y), (Shape{4, 5}));
  EXPECT_EQ(ctx.dtype(y), DType::Float32);
  EXPECT_EQ(error_of([&] { ctx.add("no_such_op", {x}); }).code(), ErrorCode::UnknownOp);
}

}  // namespace
}  // namespace plexus::ir
