#include "core/compile/placement.h"

#include <algorithm>
#include <map>

#include "core/ir/error.h"

namespace plexus::compile {

namespace {

using ir::ErrorCode;

// Stage of every block: from `stages`, or one stage per block on the block's device.
std::vector<StageSpec> resolve_stages(const ir::Graph& graph, const std::vector<StageSpec>& stages) {
  const std::vector<ir::Block>& blocks = graph.blocks();
  if (!stages.empty()) return stages;
  const auto pinned = std::count_if(blocks.begin(), blocks.end(), [](const ir::Block& b) { return b.device >= 0; });
  if (pinned != static_cast<long>(blocks.size())) {
    ir::fail(ErrorCode::InvalidArgument,
             "the IR has blocks but the session has no stages: give every block a device (auto-staging) or pass "
             "stages (" + std::to_string(pinned) + " of " + std::to_string(blocks.size()) + " blocks have a device)");
  }
  std::vector<StageSpec> out;
  for (const ir::Block& b : blocks) out.push_back(StageSpec{{b.name}, b.device});
  return out;
}

// Every device 0..num_devices-1 must hold a stage.
void check_devices_used(const Placement& p) {
  for (int64_t d = 0; d < p.num_devices; ++d) {
    if (std::find(p.stage_device.begin(), p.stage_device.end(), d) == p.stage_device.end()) {
      ir::fail(ErrorCode::InvalidArgument, "device " + std::to_string(d) + " of " + std::to_string(p.num_devices) +
                                               " has no stage (stages must use devices 0.." +
                                               std::to_string(p.num_devices - 1) + ")");
    }
  }
}

// Assigns the blocks of stage `s` to it (each block in one stage only) and returns the
// stage's name, its blocks joined by '+'.
std::string assign_blocks(const std::vector<ir::Block>& blocks, const StageSpec& stage, size_t s,
                          std::vector<int32_t>& block_stage) {
  if (stage.blocks.empty()) ir::fail(ErrorCode::InvalidArgument, "stage " + std::to_string(s) + " has no blocks");
  std::string name;
  for (const std::string& block : stage.blocks) {
    const auto it = std::find_if(blocks.begin(), blocks.end(), [&](const ir::Block& b) { return b.name == block; });
    if (it == blocks.end()) {
      ir::fail(ErrorCode::InvalidArgument, "stage " + std::to_string(s) + " names block '" + block +
                                               "', which the IR does not have");
    }
    int32_t& assigned = block_stage[static_cast<size_t>(it - blocks.begin())];
    if (assigned >= 0) {
      ir::fail(ErrorCode::InvalidArgument, "block '" + block + "' is in stage " + std::to_string(assigned) +
                                               " and in stage " + std::to_string(s));
    }
    assigned = static_cast<int32_t>(s);
    name += (name.empty() ? "" : "+") + block;
  }
  return name;
}

// Puts every op in its block's stage; the forward pass must flow from stage 0 to S-1.
void place_ops(const ir::Graph& graph, const std::vector<int32_t>& block_stage, Placement& p) {
  for (size_t o = 0; o < graph.num_ops(); ++o) {
    const ir::Op& op = graph.op(static_cast<ir::OpId>(o));
    p.op_stage[o] = op.block < 0 ? 0 : block_stage[static_cast<size_t>(op.block)];
    if (op.phase != ir::Phase::Forward) continue;
    for (ir::TensorId in : op.inputs) {
      const ir::OpId producer = graph.tensor(in).producer;
      if (producer >= 0 && graph.op(producer).phase == ir::Phase::Forward &&
          p.op_stage[static_cast<size_t>(producer)] > p.op_stage[o]) {
        ir::fail(ErrorCode::InvalidArgument, "op '" + op.name + "' in stage " + std::to_string(p.op_stage[o]) + " (" +
                                                 p.stage_names[static_cast<size_t>(p.op_stage[o])] +
                                                 ") uses a tensor of the later stage " +
                                                 std::to_string(p.op_stage[static_cast<size_t>(producer)]));
      }
    }
  }
}

}  // namespace

Placement place(const ir::Graph& graph, const std::vector<StageSpec>& stage_specs) {
  Placement p;
  p.op_stage.assign(graph.num_ops(), 0);
  const std::vector<ir::Block>& blocks = graph.blocks();
  if (blocks.empty()) {
    if (!stage_specs.empty()) ir::fail(ErrorCode::InvalidArgument, "stages were given but the IR has no blocks");
    p.stage_device = {0};
    p.stage_names = {"main"};
    return p;
  }
  const std::vector<StageSpec> stages = resolve_stages(graph, stage_specs);
  std::vector<int32_t> block_stage(blocks.size(), -1);
  p.num_stages = static_cast<int64_t>(stages.size());
  for (size_t s = 0; s < stages.size(); ++s) {
    p.stage_names.push_back(assign_blocks(blocks, stages[s], s, block_stage));
    p.stage_device.push_back(stages[s].device < 0 ? static_cast<int64_t>(s) : stages[s].device);
  }
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (block_stage[b] < 0) ir::fail(ErrorCode::InvalidArgument, "block '" + blocks[b].name + "' is in no stage");
  }
  p.num_devices = *std::max_element(p.stage_device.begin(), p.stage_device.end()) + 1;
  check_devices_used(p);
  place_ops(graph, block_stage, p);
  return p;
}

}  // namespace plexus::compile
