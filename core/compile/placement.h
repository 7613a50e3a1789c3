// Placement of a replica's ops on its devices (seed 003, "Execution strategies"): blocks
// are grouped into stages, stages are placed on devices, and every op runs in the stage of
// its block. Three ways, as PopTorch offers: explicit stages (blocks + device), the short
// form (stages follow device order), or auto-staging (one stage per block, on the device
// the block names). An IR without blocks is one stage on one device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::compile {

/// One stage: its blocks, and its device within the replica (-1: the stage's index).
struct StageSpec {
  std::vector<std::string> blocks;
  int64_t device = -1;
};

struct Placement {
  int64_t num_stages = 1;
  int64_t num_devices = 1;              ///< devices per replica
  std::vector<int64_t> stage_device;    ///< [S]
  std::vector<int32_t> op_stage;        ///< per op
  std::vector<std::string> stage_names; ///< "B1+B2", for messages and traces
};

/// Places `graph`'s ops. Throws InvalidArgument naming the block or stage at fault: stages
/// given for an IR without blocks, a block in no stage or in two, an unknown block name, a
/// device with no stage, blocks with and without devices mixed under auto-staging, or a
/// forward op that uses a tensor computed in a later stage.
Placement place(const ir::Graph& graph, const std::vector<StageSpec>& stages);

}  // namespace plexus::compile
