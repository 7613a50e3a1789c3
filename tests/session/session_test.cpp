#include "core/session/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "core/ir/autodiff.h"
#include "core/ir/error.h"
#include "core/ops/matmul/gemm.h"
#include "tests/runtime/test_graphs.h"

#include "tests/session/allocation_counter.h"

namespace plexus::session {
namespace {

using ::testing::HasSubstr;
using runtime::testing::Accumulator;
using runtime::testing::f32;
using runtime::DeviceMemoryStats;
using runtime::HostArray;

template <class F>
std::string error_of(F body, ir::ErrorCode code) {
  try {
    body();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

std::vector<float> read(const Session& s, ir::TensorId t, size_t n) {
  std::vector<float> out(n);
  s.read_variable(t, std::as_writable_bytes(std::span(out)));
  return out;
}

TEST(Session, DeviceIterationsConsumeLeadingDimOfHostArrays) {
  Accumulator m;
  SessionOptions opts;
  opts.device_iterations = 3;
  Session s(m.graph, opts);
  EXPECT_EQ(s.host_shape(m.x_stream), (ir::Shape{3, 2}));
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(6, -1.0f);
  const HostArray in{m.x_stream, x.data(), ir::DType::Float32, {3, 2}};
  const HostArray out{m.y_stream, y.data(), ir::DType::Float32, {3, 2}};
  s.run(std::span(&in, 1), std::span(&out, 1));
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(read(s, m.acc, 2), (std::vector<float>{9, 12}));  // 1+3+5, 2+4+6
  s.run(std::span(&in, 1), {});                                // outputs are optional
  EXPECT_EQ(read(s, m.acc, 2), (std::vector<float>{18, 24}));   // variables persist across runs
}

// Inference runs device_iterations as repeats of a program of at most 4096 micro-batches
// (10000 = 4 x 2500), so the program does not grow with them; the rows keep their order.
TEST(Session, ManyInferenceIterationsRepeatABoundedProgram) {
  Accumulator m;
  SessionOptions opts;
  opts.device_iterations = 10000;
  Session s(m.graph, opts);
  EXPECT_EQ(s.micro_batches(), 2500);
  std::vector<float> x(20000), y(20000, -1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  const HostArray in{m.x_stream, x.data(), ir::DType::Float32, {10000, 2}};
  const HostArray out{m.y_stream, y.data(), ir::DType::Float32, {10000, 2}};
  s.run(std::span(&in, 1), std::span(&out, 1));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i]) << "row " << i / 2;
  float even = 0, odd = 0;
  for (size_t i = 0; i < x.size(); i += 2) even += x[i], odd += x[i + 1];
  EXPECT_EQ(read(s, m.acc, 2), (std::vector<float>{even, odd}));
  opts.device_iterations = 4099;  // prime: one micro-batch per repeat
  EXPECT_EQ(Session(m.graph, opts).micro_batches(), 1);
}

// Host arrays that cannot exist are refused when the session is created, naming the stream.
TEST(Session, DeviceIterationsWhoseHostArraysCannotExistAreRefused) {
  Accumulator m;
  SessionOptions opts;
  opts.device_iterations = int64_t{1} << 40;  // 2^40 x 2 floats: 8 TiB per stream
  std::string msg = error_of([&] { Session s(m.graph, opts); }, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("its host array would be [1099511627776,2] float32 (device_iterations=1099511627776"));
  EXPECT_THAT(msg, HasSubstr("more than this host's memory"));
  opts.device_iterations = int64_t{1} << 62;
  msg = error_of([&] { Session s(m.graph, opts); }, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("more bytes than int64 counts"));
}

TEST(Session, LeadingDimIsLeftOutForOneIteration) {
  Accumulator m;
  Session s(m.graph, {});
  EXPECT_EQ(s.host_shape(m.x_stream), (ir::Shape{2}));
}

TEST(Session, WrongHostArrayShapeNamesStreamExpectedAndGiven) {
  Accumulator m;
  SessionOptions opts;
  opts.device_iterations = 4;
  Session s(m.graph, opts);
  std::vector<float> x(8);
  const HostArray in{m.x_stream, x.data(), ir::DType::Float32, {8}};
  const std::string msg = error_of([&] { s.run(std::span(&in, 1), {}); }, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(msg, HasSubstr("input stream 'x': host array has shape [8], expected [4,2]"));
  EXPECT_THAT(msg, HasSubstr("device_iterations=4"));
}

TEST(Session, MissingDuplicateAndMisdirectedArraysAreErrors) {
  Accumulator m;
  Session s(m.graph, {});
  std::vector<float> x(2);
  EXPECT_THAT(error_of([&] { s.run({}, {}); }, ir::ErrorCode::InvalidArgument),
              HasSubstr("input stream 'x' has no host array"));
  const HostArray twice[2] = {{m.x_stream, x.data(), ir::DType::Float32, {2}},
                              {m.x_stream, x.data(), ir::DType::Float32, {2}}};
  EXPECT_THAT(error_of([&] { s.run(twice, {}); }, ir::ErrorCode::InvalidArgument), HasSubstr("given twice"));
  const HostArray wrong_way{m.y_stream, x.data(), ir::DType::Float32, {2}};
  EXPECT_THAT(error_of([&] { s.run(std::span(&wrong_way, 1), {}); }, ir::ErrorCode::InvalidArgument),
              HasSubstr("is device-to-host, not an input"));
  const HostArray wrong_dtype{m.x_stream, x.data(), ir::DType::Int32, {2}};
  EXPECT_THAT(error_of([&] { s.run(std::span(&wrong_dtype, 1), {}); }, ir::ErrorCode::DTypeMismatch),
              HasSubstr("host array is int32, expected float32"));
}

TEST(Session, DeviceToHostCopiesHappenWhereTheStreamWasAdded) {
  ir::Graph g;
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {1}, f32({1.0f}));
  const ir::TensorId one = g.add_constant(ir::DType::Float32, {1}, f32({1.0f}));
  const ir::StreamId before = g.add_d2h_stream("before", w);
  g.add_op("scaled_add_", {w, one}, {});
  const ir::StreamId after = g.add_d2h_stream("after", w);
  Session s(g, {});
  float b = 0, a = 0;
  const HostArray outs[2] = {{before, &b, ir::DType::Float32, {1}}, {after, &a, ir::DType::Float32, {1}}};
  s.run({}, outs);
  EXPECT_EQ(b, 1.0f);
  EXPECT_EQ(a, 2.0f);
}

// A constant (or an unused variable) streamed out with no op reading it: the stream
// returns its value (this failed with std::out_of_range "map::at" while compiling).
TEST(Session, StreamsOutConstantsAndVariablesNoOpReads) {
  ir::Graph g;
  const ir::TensorId c = g.add_constant(ir::DType::Float32, {2}, f32({3.0f, 4.0f}));
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {1}, f32({5.0f}));
  const ir::StreamId cs = g.add_d2h_stream("c", c);
  const ir::StreamId ws = g.add_d2h_stream("w_out", w);
  Session s(g, {});
  float cv[2] = {0, 0}, wv = 0;
  const HostArray outs[2] = {{cs, cv, ir::DType::Float32, {2}}, {ws, &wv, ir::DType::Float32, {1}}};
  s.run({}, outs);
  EXPECT_EQ(cv[0], 3.0f);
  EXPECT_EQ(cv[1], 4.0f);
  EXPECT_EQ(wv, 5.0f);
}

TEST(Session, ReadAndWriteVariables) {
  Accumulator m;
  Session s(m.graph, {});
  const std::vector<float> v = {7, 8};
  s.write_variable(m.acc, std::as_bytes(std::span(v)));
  EXPECT_EQ(read(s, m.acc, 2), v);
  std::vector<float> small(1);
  EXPECT_THAT(error_of([&] { s.read_variable(m.acc, std::as_writable_bytes(std::span(small))); },
                       ir::ErrorCode::InvalidArgument),
              HasSubstr("variable 'acc': host buffer is 4 bytes, expected 8"));
  EXPECT_THAT(error_of([&] { s.read_variable(m.graph.stream(m.x_stream).tensor, {}); }, ir::ErrorCode::InvalidArgument),
              HasSubstr("is not a variable"));
}

TEST(Session, MemoryStatsAreExact) {
  Accumulator m;
  Session s(m.graph, {});
  DeviceMemoryStats st = s.memory_stats(0);
  EXPECT_EQ(st.variable_bytes, 8u + 4u);  // acc [2] + the constant 2.0
  EXPECT_EQ(st.current_bytes, st.variable_bytes);
  std::vector<float> x = {1, 2};
  const HostArray in{m.x_stream, x.data(), ir::DType::Float32, {2}};
  s.run(std::span(&in, 1), {});
  st = s.memory_stats(0);
  EXPECT_EQ(st.current_bytes, st.variable_bytes);        // back to resident bytes after a run
  EXPECT_EQ(st.peak_bytes, st.planned_peak_bytes);       // x and x*2 live together at the mul
  EXPECT_EQ(st.planned_peak_bytes, st.variable_bytes + 8u + 8u);
  EXPECT_GE(st.arena_bytes, st.planned_peak_bytes);
  EXPECT_THAT(error_of([&] { s.memory_stats(1); }, ir::ErrorCode::NotFound), HasSubstr("device 1 does not exist"));
}

TEST(Session, PlanLargerThanDeviceMemoryIsRefusedNamingDeviceAndBytes) {
  Accumulator m;
  SessionOptions opts;
  opts.device_memory_bytes = 16;
  const std::string msg = error_of([&] { Session s(m.graph, opts); }, ir::ErrorCode::OutOfDeviceMemory);
  EXPECT_THAT(msg, HasSubstr("device 0 needs"));
  EXPECT_THAT(msg, HasSubstr("capacity (device_memory_bytes) is 16"));
}

// The c_api_sequence fuzzer's find: a prefetch depth that makes a stream's queue larger
// than the machine reached the allocator (ASan aborts on it; without ASan the OOM killer
// would answer). It is refused at session creation, naming the queue.
TEST(Session, AStreamQueueLargerThanTheMachineIsRefusedNamingTheStream) {
  Accumulator m;
  SessionOptions opts;
  opts.prefetch_depth = int64_t{1} << 40;
  const std::string msg = error_of([&] { Session s(m.graph, opts); }, ir::ErrorCode::OutOfDeviceMemory);
  EXPECT_THAT(msg, HasSubstr("cannot allocate the buffers of queue host-to-device stream"));
  EXPECT_THAT(msg, HasSubstr("exceed this machine's physical memory"));
}

TEST(Session, BadOptionsAreRefused) {
  Accumulator m;
  SessionOptions opts;
  opts.device_iterations = 0;
  EXPECT_THAT(error_of([&] { Session s(m.graph, opts); }, ir::ErrorCode::InvalidArgument),
              HasSubstr("device_iterations is 0, must be >= 1"));
}

TEST(Session, KernelErrorEndsTheRunAndTheSessionStaysUsable) {
  ir::Graph g;
  const ir::StreamId ls = g.add_h2d_stream("labels", ir::DType::Int32, {2});
  const ir::TensorId logits = g.add_variable("logits", ir::DType::Float32, {2, 3}, f32({1, 2, 3, 4, 5, 6}));
  const ir::StreamId loss =
      g.add_d2h_stream("loss", g.add_op("softmax_cross_entropy", {logits, g.stream(ls).tensor}, {}).front());
  Session s(g, {});
  int32_t bad[2] = {0, 7};
  float value = 0;
  const HostArray out{loss, &value, ir::DType::Float32, {}};
  const HostArray bad_in{ls, bad, ir::DType::Int32, {2}};
  EXPECT_THAT(error_of([&] { s.run(std::span(&bad_in, 1), std::span(&out, 1)); }, ir::ErrorCode::Runtime),
              HasSubstr("label 7 at row 1 is outside [0, 3)"));
  int32_t good[2] = {2, 2};
  const HostArray good_in{ls, good, ir::DType::Int32, {2}};
  s.run(std::span(&good_in, 1), std::span(&out, 1));
  EXPECT_NEAR(value, 0.40760596f, 1e-6f);  // logsumexp(1,2,3) - 3
}

TEST(Session, RunningAllocatesNothingPerStep) {
  Accumulator m;
  auto allocations_of_one_run = [&](int64_t iterations, int64_t depth) {
    SessionOptions opts;
    opts.device_iterations = iterations;
    opts.prefetch_depth = depth;
    Session s(m.graph, opts);
    std::vector<float> x(static_cast<size_t>(2 * iterations), 1.0f), y(x.size());
    const ir::Shape shape = s.host_shape(m.x_stream);
    const HostArray in{m.x_stream, x.data(), ir::DType::Float32, shape};
    const HostArray out{m.y_stream, y.data(), ir::DType::Float32, shape};
    s.run(std::span(&in, 1), std::span(&out, 1));  // warm-up
    const long before = testing::allocation_count();
    s.run(std::span(&in, 1), std::span(&out, 1));
    return testing::allocation_count() - before;
  };
  for (int64_t depth : {0, 2}) {  // devices copying, and io threads prefetching
    const long some = allocations_of_one_run(2, depth);
    EXPECT_EQ(allocations_of_one_run(64, depth), some) << "depth " << depth;  // nothing per step or per op
    // and a few per run: argument checks, the request, its stream bindings, the io tasks
    EXPECT_LE(some, 32) << "depth " << depth;
  }
}

// A GEMM on 2 threads hands its second panel to a helper thread by reference: once the
// helpers run, a call allocates nothing (ops::run_parts never copies the panel callable).
TEST(Session, GemmPanelsOnHelperThreadsAllocateNothingPerCall) {
  const ops::GemmShape shape{128, 96, 64, false, true};
  const ops::Gemm gemm = ops::Gemm::plan(shape, 1).with_threads(2);
  std::vector<float> a(128 * 64, 0.5f), b(96 * 64, 0.25f), c(128 * 96, 0.0f);
  gemm.run(a.data(), b.data(), c.data(), 1.0f, 0.0f);  // starts the helpers
  const long before = testing::allocation_count();
  for (int i = 0; i < 10; ++i) gemm.run(a.data(), b.data(), c.data(), 1.0f, 0.0f);
  EXPECT_EQ(testing::allocation_count() - before, 0);
  EXPECT_FLOAT_EQ(c[0], 64 * 0.5f * 0.25f);
}

TEST(Session, RunsAreDeterministic) {
  auto train = [] {
    ir::Graph g;
    const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {4, 3});
    std::vector<float> w0(3 * 5);
    for (size_t i = 0; i < w0.size(); ++i) w0[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
    const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {3, 5}, f32(w0));
    const ir::TensorId h = g.add_op("gelu", {g.add_op("matmul", {g.stream(xs).tensor, w}, {}).front()}, {}).front();
    const ir::TensorId loss = g.add_op("reduce_mean", {g.add_op("mul", {h, h}, {}).front()}, {}).front();
    ir::Attributes sgd;
    sgd.set("b", -0.1);
    const std::vector<ir::TensorId> grads = ir::autodiff(g, loss, std::vector<ir::TensorId>{w});
    g.add_op("scaled_add_", {w, grads[0]}, sgd);
    SessionOptions opts;
    opts.device_iterations = 10;
    Session s(g, opts);
    std::vector<float> x(10 * 12);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 11) * 0.1f - 0.5f;
    const HostArray in{xs, x.data(), ir::DType::Float32, {10, 4, 3}};
    s.run(std::span(&in, 1), {});
    return read(s, w, 15);
  };
  const std::vector<float> a = train(), b = train();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

// Streams added after the update op with gradient accumulation 3 and 2 device iterations:
// the loss (a per-micro-batch tensor) still comes back per micro-batch, [2, 3], and the
// updated weight once per iteration, [2] + S. Both runs hung before: the copy sat in the
// update step (once per iteration) while the host array expected one row per micro-batch.
TEST(Session, StreamsAddedAfterTheUpdateFollowTheirTensorsPhase) {
  ir::Graph g;
  const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {2});
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {2}, f32({1.0f, 1.0f}));
  const ir::TensorId prod = g.add_op("mul", {g.stream(xs).tensor, w}, {}).front();
  const ir::TensorId loss = g.add_op("reduce_sum", {prod}, {}).front();
  ir::Attributes sgd;
  sgd.set("b", -0.1);
  const ir::TensorId updated =
      g.add_op("scaled_add_", {w, ir::autodiff(g, loss, std::vector<ir::TensorId>{w})[0]}, sgd).front();
  const ir::StreamId loss_out = g.add_d2h_stream("loss", loss);
  const ir::StreamId w_out = g.add_d2h_stream("w_out", updated);
  SessionOptions opts;
  opts.device_iterations = 2;
  opts.gradient_accumulation = 3;
  Session s(g, opts);
  const std::vector<float> x(12, 1.0f);
  std::vector<float> losses(6), weights(4);
  const HostArray in{xs, const_cast<float*>(x.data()), ir::DType::Float32, {6, 2}};
  const HostArray outs[2] = {{loss_out, losses.data(), ir::DType::Float32, {2, 3}},
                             {w_out, weights.data(), ir::DType::Float32, {2, 2}}};
  s.run(std::span(&in, 1), outs);
  EXPECT_EQ(losses, std::vector<float>({2.0f, 2.0f, 2.0f, 1.8f, 1.8f, 1.8f}));
  EXPECT_FLOAT_EQ(weights[0], 0.9f);
  EXPECT_FLOAT_EQ(weights[2], 0.8f);
}

}  // namespace
}  // namespace plexus::session
