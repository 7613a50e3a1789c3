// The host array layout (core/streams/host_array_layout.cpp): shapes, offsets and rows of
// every output mode, the loader's order, and bad arrays.
#include "core/streams/host_array_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/ir/error.h"

namespace plexus::streams {
namespace {

using ::testing::HasSubstr;

// I = 4 device iterations, G = 2, R = 3 replicas.
RunDims dims(OutputMode mode, int64_t period = 1) { return {4, 2, 3, mode, period, false}; }

// Rows of replica 1's values, in run order.
std::vector<int64_t> rows_of(const HostArrayLayout& l) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < l.items(); ++k) out.push_back(l.output_row(k, 1));
  return out;
}

TEST(HostArrayLayout, InputsAreStepsByReplicas) {
  const HostArrayLayout l = HostArrayLayout::input(dims(OutputMode::All), ir::DType::Float32, {5});
  EXPECT_EQ(l.host_shape(), (ir::Shape{8, 3, 5}));
  EXPECT_EQ(l.items(), 8);
  EXPECT_EQ(l.item_bytes(), 20u);
  EXPECT_EQ(l.index(2, 1), 7);
  EXPECT_EQ(l.source_offset(2, 1), 140u);
  EXPECT_EQ(l.step_and_replica(7), (std::pair<int64_t, int64_t>{2, 1}));
  EXPECT_FALSE(l.accumulates());
}

TEST(HostArrayLayout, LeadingOnesAreLeftOut) {
  const RunDims one{1, 1, 1, OutputMode::All, 1, false};
  EXPECT_EQ(HostArrayLayout::input(one, ir::DType::Float32, {5}).host_shape(), (ir::Shape{5}));
  EXPECT_EQ(HostArrayLayout::input({1, 1, 2, OutputMode::All, 1, false}, ir::DType::Float32, {}).host_shape(),
            (ir::Shape{2}));
  EXPECT_EQ(HostArrayLayout::output(one, false, ir::DType::Float32, {2, 1}).host_shape(), (ir::Shape{2, 1}));
}

TEST(HostArrayLayout, OutputModeAllReturnsEveryValue) {
  const HostArrayLayout l = HostArrayLayout::output(dims(OutputMode::All), false, ir::DType::Float32, {5});
  EXPECT_EQ(l.host_shape(), (ir::Shape{4, 2, 3, 5}));
  EXPECT_EQ(rows_of(l), (std::vector<int64_t>{1, 4, 7, 10, 13, 16, 19, 22}));
  EXPECT_EQ(l.row_offset(22), 440u);
  const HostArrayLayout per_update = HostArrayLayout::output(dims(OutputMode::All), true, ir::DType::Float32, {5});
  EXPECT_EQ(per_update.host_shape(), (ir::Shape{4, 3, 5}));
  EXPECT_EQ(rows_of(per_update), (std::vector<int64_t>{1, 4, 7, 10}));
}

TEST(HostArrayLayout, OutputModeEveryNReturnsEveryNthIteration) {
  const HostArrayLayout l = HostArrayLayout::output(dims(OutputMode::EveryN, 2), false, ir::DType::Float32, {5});
  EXPECT_EQ(l.host_shape(), (ir::Shape{2, 2, 3, 5}));
  EXPECT_EQ(rows_of(l), (std::vector<int64_t>{-1, -1, 1, 4, -1, -1, 7, 10}));
}

TEST(HostArrayLayout, OutputModeFinalReturnsTheLastValue) {
  const HostArrayLayout l = HostArrayLayout::output(dims(OutputMode::Final), false, ir::DType::Float32, {5});
  EXPECT_EQ(l.host_shape(), (ir::Shape{3, 5}));
  EXPECT_EQ(rows_of(l), (std::vector<int64_t>{-1, -1, -1, -1, -1, -1, -1, 1}));
  EXPECT_FALSE(l.accumulates());
}

TEST(HostArrayLayout, OutputModeSumAddsEveryValueIntoTheReplicasRow) {
  const HostArrayLayout l = HostArrayLayout::output(dims(OutputMode::Sum), false, ir::DType::Float32, {5});
  EXPECT_EQ(l.host_shape(), (ir::Shape{3, 5}));
  EXPECT_EQ(rows_of(l), (std::vector<int64_t>(8, 1)));
  EXPECT_TRUE(l.accumulates());
}

TEST(HostArrayLayout, BadArraysAreNamedWithTheRunsFigures) {
  const HostArrayLayout l = HostArrayLayout::input(dims(OutputMode::All), ir::DType::Float32, {5});
  EXPECT_NO_THROW(l.check("input stream 'x'", ir::DType::Float32, {8, 3, 5}));
  try {
    l.check("input stream 'x'", ir::DType::Int32, {8, 3, 5});
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::DTypeMismatch);
    EXPECT_THAT(e.what(), HasSubstr("input stream 'x': host array is int32, expected float32"));
  }
  try {
    l.check("input stream 'x'", ir::DType::Float32, {4, 3, 5});
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.what(), HasSubstr("host array has shape [4,3,5], expected [8,3,5] (device_iterations=4, "
                                    "gradient_accumulation=2, replication_factor=3, stream shape [5]"));
  }
  RunDims worker = dims(OutputMode::All);
  worker.several_workers = true;
  try {
    HostArrayLayout::input(worker, ir::DType::Float32, {5}).check("input stream 'x'", ir::DType::Float32, {1});
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("replicas hosted by this worker=3"));
  }
}

TEST(HostArrayLayout, HostBytesCountTheArrayAndRefuseOnesThatCannotExist) {
  const HostArrayLayout l = HostArrayLayout::input(dims(OutputMode::All), ir::DType::Float32, {5});
  EXPECT_EQ(l.host_bytes("input stream 'x'", 480), 480);  // [8, 3, 5] floats
  try {
    (void)l.host_bytes("input stream 'x'", 479);
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("input stream 'x': its host array would be [8,3,5] float32 (device_iterations=4, "
                                    "gradient_accumulation=2), 480 bytes, more than this host's memory (479 bytes)"));
  }
  const RunDims huge{int64_t{1} << 61, 2, 3, OutputMode::All, 1, false};
  try {
    (void)HostArrayLayout::input(huge, ir::DType::Float32, {5}).host_bytes("input stream 'x'", INT64_MAX);
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("more bytes than int64 counts"));
  }
  const RunDims final_only{int64_t{1} << 61, 2, 3, OutputMode::Final, 1, false};
  EXPECT_EQ(HostArrayLayout::output(final_only, false, ir::DType::Float32, {5}).host_bytes("y", 60), 60);
}

}  // namespace
}  // namespace plexus::streams
