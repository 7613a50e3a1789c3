// Placement (core/compile/placement.cpp; seed 003, "Execution strategies"): explicit
// stages, the short form (stages in device order), auto-staging from the blocks' devices,
// an IR without blocks, and every error naming the block, stage or device at fault.
#include "core/compile/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/error_of.h"

namespace plexus::compile {
namespace {

using ::testing::HasSubstr;
using test::error_of;

// x -> B1: relu -> B2: relu -> B3: relu, each block pinned to `devices[b]` (-1: none).
struct ThreeBlocks {
  ir::Graph g;
  explicit ThreeBlocks(std::vector<int64_t> devices = {-1, -1, -1}) {
    ir::TensorId t = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {2, 3})).tensor;
    for (int b = 0; b < 3; ++b) {
      g.begin_block("B" + std::to_string(b + 1), devices[static_cast<size_t>(b)]);
      t = g.add_op("relu", {t}, {}).front();
      g.end_block();
    }
  }
};

TEST(Placement, AnIrWithoutBlocksIsOneStageOnOneDevice) {
  ir::Graph g;
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {2})).tensor;
  g.add_op("relu", {x}, {});
  const Placement p = place(g, {});
  EXPECT_EQ(p.num_stages, 1);
  EXPECT_EQ(p.num_devices, 1);
  EXPECT_EQ(p.stage_device, (std::vector<int64_t>{0}));
  EXPECT_EQ(p.stage_names, (std::vector<std::string>{"main"}));
  EXPECT_EQ(p.op_stage, (std::vector<int32_t>{0}));
}

TEST(Placement, ExplicitStagesGroupBlocksAndNameThemJoined) {
  ThreeBlocks m;
  const Placement p = place(m.g, {{{"B1", "B2"}, 1}, {{"B3"}, 0}});
  EXPECT_EQ(p.num_stages, 2);
  EXPECT_EQ(p.num_devices, 2);
  EXPECT_EQ(p.stage_device, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.stage_names, (std::vector<std::string>{"B1+B2", "B3"}));
  EXPECT_EQ(p.op_stage, (std::vector<int32_t>{0, 0, 1}));
}

TEST(Placement, TheShortFormPutsStageSOnDeviceS) {
  ThreeBlocks m;
  const Placement p = place(m.g, {{{"B1"}, -1}, {{"B2"}, -1}, {{"B3"}, -1}});
  EXPECT_EQ(p.stage_device, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(p.num_devices, 3);
  EXPECT_EQ(p.op_stage, (std::vector<int32_t>{0, 1, 2}));
}

TEST(Placement, AutoStagingMakesOneStagePerBlockOnItsDevice) {
  ThreeBlocks m({0, 1, 1});
  const Placement p = place(m.g, {});
  EXPECT_EQ(p.num_stages, 3);
  EXPECT_EQ(p.num_devices, 2);
  EXPECT_EQ(p.stage_device, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(p.stage_names, (std::vector<std::string>{"B1", "B2", "B3"}));
}

TEST(Placement, AutoStagingNeedsEveryBlocksDevice) {
  ThreeBlocks m({0, -1, 1});
  const ir::Error e = error_of([&] { place(m.g, {}); });
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("2 of 3 blocks have a device"));
}

TEST(Placement, StagesForAnIrWithoutBlocksAreRefused) {
  ir::Graph g;
  g.add_h2d_stream("x", ir::DType::Float32, {2});
  EXPECT_THAT(error_of([&] { place(g, {{{"B1"}, 0}}); }).what(), HasSubstr("the IR has no blocks"));
}

TEST(Placement, EachBadStageListIsNamed) {
  ThreeBlocks m;
  EXPECT_THAT(error_of([&] { place(m.g, {{{"B1", "B2"}, 0}, {{}, 1}, {{"B3"}, 2}}); }).what(),
              HasSubstr("stage 1 has no blocks"));
  EXPECT_THAT(error_of([&] { place(m.g, {{{"B1", "B2", "B4"}, 0}, {{"B3"}, 1}}); }).what(),
              HasSubstr("stage 0 names block 'B4', which the IR does not have"));
  EXPECT_THAT(error_of([&] { place(m.g, {{{"B1", "B2"}, 0}, {{"B2", "B3"}, 1}}); }).what(),
              HasSubstr("block 'B2' is in stage 0 and in stage 1"));
  EXPECT_THAT(error_of([&] { place(m.g, {{{"B1", "B2"}, 0}}); }).what(), HasSubstr("block 'B3' is in no stage"));
  EXPECT_THAT(error_of([&] { place(m.g, {{{"B1"}, 0}, {{"B2", "B3"}, 2}}); }).what(),
              HasSubstr("device 1 of 3 has no stage"));
}

TEST(Placement, TheForwardPassMustFlowToLaterStages) {
  ThreeBlocks m;
  const ir::Error e = error_of([&] { place(m.g, {{{"B2"}, 0}, {{"B1", "B3"}, 1}}); });
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("in stage 0 (B2) uses a tensor of the later stage 1"));
}

}  // namespace
}  // namespace plexus::compile
