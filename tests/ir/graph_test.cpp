#include "core/ir/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/ir/error.h"

namespace plexus::ir {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> f32(std::initializer_list<float> values) {
  std::vector<std::byte> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

// Runs `body`, expects an ir::Error with `code`, returns its message.
template <class F>
std::string error_of(F body, ErrorCode code) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(Graph, InfersShapesAndDtypesWhenOpsAreAdded) {
  Graph g;
  const TensorId a = g.add_variable("a", DType::Float32, {2, 3}, f32({1, 2, 3, 4, 5, 6}));
  const TensorId b = g.add_variable("b", DType::Float32, {3}, f32({1, 1, 1}));
  const TensorId c = g.add_op("add", {a, b}, {}).front();
  EXPECT_EQ(g.tensor(c).shape, (Shape{2, 3}));
  EXPECT_EQ(g.tensor(c).dtype, DType::Float32);
  EXPECT_EQ(g.tensor(c).producer, 0);
  Attributes argmax;
  argmax.set("axis", int64_t{1});
  const TensorId idx = g.add_op("argmax", {c}, argmax).front();
  EXPECT_EQ(g.tensor(idx).dtype, DType::Int32);
  EXPECT_EQ(g.tensor(idx).shape, (Shape{2}));
}

TEST(Graph, UnknownOpIsAnErrorNamingIt) {
  Graph g;
  const std::string msg = error_of([&] { g.add_op("convolve_everything", {}, {}); }, ErrorCode::UnknownOp);
  EXPECT_THAT(msg, HasSubstr("convolve_everything"));
}

TEST(Graph, WrongInputCountNamesTheOpAndCounts) {
  Graph g;
  const TensorId a = g.add_variable("a", DType::Float32, {2}, f32({1, 2}));
  const std::string msg = error_of([&] { g.add_op("add", {a}, {}); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("'add' takes 2 inputs, got 1"));
}

TEST(Graph, ShapeMismatchNamesOpInputTypesAndRule) {
  Graph g;
  const TensorId a = g.add_variable("a", DType::Float32, {2, 3}, f32({1, 2, 3, 4, 5, 6}));
  const TensorId b = g.add_variable("b", DType::Float32, {2}, f32({1, 2}));
  const std::string msg = error_of([&] { g.add_op("add", {a, b}, {}); }, ErrorCode::ShapeMismatch);
  EXPECT_THAT(msg, HasSubstr("op 'add'"));
  EXPECT_THAT(msg, HasSubstr("float32[2,3], float32[2]"));
  EXPECT_THAT(msg, HasSubstr("broadcast"));
  EXPECT_EQ(g.num_ops(), 0u);  // nothing added
}

TEST(Graph, VariableDataSizeAndNamesAreChecked) {
  Graph g;
  std::string msg = error_of([&] { g.add_variable("w", DType::Float32, {2, 2}, f32({1, 2, 3})); },
                             ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("12 bytes, expected 16"));
  g.add_variable("w", DType::Float32, {1}, f32({1}));
  msg = error_of([&] { g.add_h2d_stream("w", DType::Float32, {1}); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("already exists"));
  msg = error_of([&] { g.add_variable("z", DType::Float32, {2, 0}, {}); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("must be >= 1"));
  msg = error_of([&] { g.add_variable("r", DType::Float32, Shape(9, 1), f32({1})); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("exceeds the maximum rank 8"));
}

TEST(Graph, InPlaceOutputAliasesItsTargetAndViewsAliasTheirInput) {
  Graph g;
  const TensorId w = g.add_variable("w", DType::Float32, {2}, f32({1, 2}));
  const TensorId d = g.add_variable("d", DType::Float32, {2}, f32({1, 1}));
  const TensorId w2 = g.add_op("scaled_add_", {w, d}, {}).front();
  EXPECT_EQ(g.storage_root(w2), w);
  Attributes shape;
  shape.set("shape", std::vector<int64_t>{1, 2});
  const TensorId r = g.add_op("reshape", {w2}, shape).front();
  EXPECT_EQ(g.storage_root(r), w);
}

TEST(Graph, InPlaceOpOnAConstantIsRefused) {
  Graph g;
  const TensorId c = g.add_constant(DType::Float32, {1}, f32({1}));
  const TensorId d = g.add_variable("d", DType::Float32, {1}, f32({1}));
  const std::string msg = error_of([&] { g.add_op("scaled_add_", {c, d}, {}); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("cannot modify the constant"));
}

TEST(Graph, RollbackRemovesEverythingAddedAfterTheMark) {
  Graph g;
  const TensorId a = g.add_variable("a", DType::Float32, {1}, f32({1}));
  const Graph::Mark m = g.mark();
  g.add_op("neg", {a}, {});
  g.add_d2h_stream("out", a);
  g.rollback(m);
  EXPECT_EQ(g.num_tensors(), 1u);
  EXPECT_EQ(g.num_ops(), 0u);
  EXPECT_EQ(g.num_streams(), 0u);
}

TEST(Graph, DeviceToHostStreamsRecordTheirPlaceInTheProgram) {
  Graph g;
  const TensorId a = g.add_variable("a", DType::Float32, {1}, f32({1}));
  const StreamId early = g.add_d2h_stream("early", a);
  g.add_op("neg", {a}, {});
  const StreamId late = g.add_d2h_stream("late", a);
  EXPECT_EQ(g.stream(early).after_ops, 0u);
  EXPECT_EQ(g.stream(late).after_ops, 1u);
}

TEST(Graph, CopiesKeepTheTagAndNewGraphsGetNewOnes) {
  Graph g1, g2;
  EXPECT_NE(g1.tag(), g2.tag());
  const Graph copy = g1;
  EXPECT_EQ(copy.tag(), g1.tag());
}

TEST(Graph, MissingTensorIsNotFound) {
  Graph g;
  const std::string msg = error_of([&] { g.tensor(7); }, ErrorCode::NotFound);
  EXPECT_THAT(msg, HasSubstr("tensor 7 does not exist"));
}

/// x -> neg -> exp -> sqrt -> add(., x), sqrt's output streamed; a chain whose middle ops a rewrite can fuse.
struct Chain {
  Graph g;
  TensorId x, a, b, c, d;
  StreamId out;
  Chain() {
    x = g.add_variable("x", DType::Float32, {2}, f32({1, 2}));
    a = g.add_op("neg", {x}, {})[0];
    b = g.add_op("exp", {a}, {})[0];
    c = g.add_op("sqrt", {b}, {})[0];
    out = g.add_d2h_stream("c", c);
    d = g.add_op("add", {c, x}, {})[0];
  }
};

TEST(Graph, FuseOpsReplacesTheOpsByOneAndShiftsLaterOpsAndStreams) {
  Chain m;
  ASSERT_EQ(m.g.stream(m.out).after_ops, 3u);
  m.g.fuse_ops({1, 2}, "tanh", {m.a}, {}, {m.c});  // exp and sigmoid as one op (of the same output type)
  ASSERT_EQ(m.g.num_ops(), 3u);
  EXPECT_EQ(m.g.op(1).schema->name, "tanh");
  EXPECT_EQ(m.g.op(1).name, "tanh#1");
  EXPECT_EQ(m.g.op(1).inputs, std::vector<TensorId>{m.a});
  EXPECT_EQ(m.g.tensor(m.c).producer, 1);
  EXPECT_EQ(m.g.tensor(m.b).producer, -1) << "the tensor between them: made by nothing";
  EXPECT_TRUE(m.g.consumers(m.b).empty());
  EXPECT_EQ(m.g.tensor(m.d).producer, 2) << "the add moved down by one";
  EXPECT_EQ(m.g.stream(m.out).after_ops, 2u) << "still copied after the fused op";
}

TEST(Graph, FuseOpsRefusesOpsOutOfOrderForeignOutputsAndReadIntermediates) {
  Chain m;
  EXPECT_THAT(error_of([&] { m.g.fuse_ops({2, 1}, "tanh", {m.a}, {}, {m.c}); }, ErrorCode::Internal),
              HasSubstr("ascending"));
  EXPECT_THAT(error_of([&] { m.g.fuse_ops({1, 2}, "tanh", {m.a}, {}, {m.d}); }, ErrorCode::Internal),
              HasSubstr("is not theirs"));
  EXPECT_THAT(error_of([&] { m.g.fuse_ops({2, 3}, "add", {m.b, m.x}, {}, {m.d}); }, ErrorCode::Internal),
              HasSubstr("is read outside them")) << "c is streamed";
  EXPECT_THAT(error_of([&] { m.g.fuse_ops({0}, "neg", {m.x}, {}, {}); }, ErrorCode::Internal),
              HasSubstr("is read outside them")) << "exp reads a";
  EXPECT_THAT(error_of([&] { m.g.fuse_ops({1, 2}, "reduce_sum", {m.a}, {}, {m.c}); }, ErrorCode::Internal),
              HasSubstr("changes its outputs"));
  EXPECT_EQ(m.g.num_ops(), 4u) << "a refused rewrite changes nothing";
  EXPECT_EQ(m.g.tensor(m.c).producer, 2);
}

}  // namespace
}  // namespace plexus::ir
