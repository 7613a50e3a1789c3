// Compilation of an IR into what each device of a replica runs (seed 003; docs/design.md "Data
// flow" and "Pipelining"): per stage, the actions of its forward, backward and update steps
// (stream copies, transfers between stages, kernels, gradient accumulation, optimizer state
// loads), the memory plan of one micro-batch slot of the stage, and where every tensor of
// the stage lives. Ops keep the order they were added (a topological order that also honours
// in-place semantics, as in PopXL, and in_sequence).
//
// Memory of a device: a persistent block (its stages' variables and constants, gradient
// accumulators), one scratch area its ops share (a device runs one op at a time), then,
// for each of its stages, `slots` copies of the stage's slot region: the tensors of one micro-batch from its forward step to its backward step, planned
// by liveness over the stage's action timeline [forward | backward | update]; an op that
// may write its output over a dying input of the same size (ops::KernelDef::may_inplace)
// gets that input's buffer. Stream tensors read in place live in their queue's buffers
// instead. The update
// step runs once every slot is free and uses slot 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/ir/graph.h"
#include "core/memory/memory_plan.h"
#include "core/compile/placement.h"

namespace plexus::compile {

enum class ActionKind : uint8_t {
  LoadStream,      ///< host -> this stage, `index` = stream
  Receive,         ///< channel -> this stage, `index` = channel
  RunOp,           ///< `index` = op
  Send,            ///< this stage -> channel, `index` = channel
  StoreStream,     ///< this stage -> host, `index` = stream
  Accumulate,      ///< accumulator += micro-batch value, `index` = root tensor
  LoadOffloaded,   ///< host-resident optimizer state -> staging buffer, `index` = root tensor
  StoreOffloaded,  ///< staging buffer -> host-resident optimizer state, `index` = root tensor
};

struct Action {
  ActionKind kind;
  int32_t index;
};

/// A tensor carried from one stage to another: for every micro-batch, or once per
/// iteration between the update steps of two stages (from_phase == to_phase == Update).
constexpr int phase_index(ir::Phase p) { return static_cast<int>(p); }

/// Variables, constants and remote variables: never in a slot region.
inline bool is_persistent(const ir::TensorInfo& t) {
  return t.kind == ir::TensorKind::Variable || t.kind == ir::TensorKind::Constant ||
         t.kind == ir::TensorKind::RemoteVariable;
}

struct ChannelPlan {
  ir::TensorId root;
  int32_t from_stage, to_stage;
  ir::Phase from_phase, to_phase;  ///< the step that sends / the step that receives
  size_t bytes;
};

/// A share of a slot region's bytes: `bytes` held for `root` at timeline positions
/// [first, last]. A buffer an op's output takes over from a dying input (may_inplace) is
/// its input's piece up to the op and its output's from the op on; the inputs (or outputs) of
/// an op laid out as one span (Program::span_ops) are one piece each, of its aligned size.
struct SlotPiece {
  ir::TensorId root;
  size_t bytes;
  int64_t first, last;
};

struct StagePlan {
  std::vector<Action> actions[3];      ///< per ir::Phase: forward, backward, update
  size_t first_position[3] = {0, 0, 0};  ///< timeline position of each phase's first action
  std::map<ir::TensorId, size_t> slot_offset;     ///< roots in the slot region
  /// Roots in the slot region -> the first and last timeline positions of their buffer.
  std::map<ir::TensorId, std::pair<int64_t, int64_t>> slot_live;
  std::map<ir::TensorId, size_t> accumulator;     ///< root -> offset in the device's persistent block
  std::set<ir::TensorId> constants;               ///< constants its ops read (persistent on its device)
  /// Host-to-device streams this stage reads in place (CompileOptions::in_place) -> the
  /// timeline position of the last action that touches their tensor.
  std::map<int32_t, size_t> in_place_last_use;
  memory::MemoryPlan slot_plan;        ///< live_bytes per timeline position
  /// Who holds the slot region's bytes: at every position k, the bytes of the pieces live
  /// at k sum to slot_plan.live_bytes[k] (core/compile/live_buffers.h reads them).
  std::vector<SlotPiece> slot_pieces;
  int64_t slots = 1;                   ///< micro-batch slots (micro-batches in flight at once)
  int64_t device = 0;
};

struct DevicePlan {
  size_t persistent_bytes = 0;   ///< exact bytes of variables, constants and accumulators
  size_t persistent_size = 0;    ///< aligned size of the persistent block
  std::map<ir::TensorId, size_t> persistent_offset;  ///< root -> offset
  std::map<int32_t, size_t> slot_base;                ///< stage -> offset of its first slot region
  size_t scratch_offset = 0;      ///< op scratch, shared by every op of the device (one runs at a time)
  size_t scratch_bytes = 0;       ///< the largest scratch of the device's ops
  size_t arena_bytes = 0;
  size_t planned_peak_bytes = 0;  ///< persistent + every slot region at its peak
};

struct Program {
  Placement placement;
  int64_t micro_batches = 1;  ///< per step: gradient accumulation (training), device iterations (inference)
  bool training = false;
  std::vector<ir::TensorId> root_of;      ///< storage root of every tensor
  std::vector<StagePlan> stages;
  std::vector<ChannelPlan> channels;
  std::vector<DevicePlan> devices;        ///< per device of a replica
  std::map<ir::TensorId, int32_t> home_stage;  ///< variables: the stage that holds them
  std::map<ir::TensorId, size_t> offloaded;    ///< optimizer state kept in host memory: root -> offset
  size_t offloaded_bytes = 0;
  /// Ops with ops::KernelDef::span_inputs whose inputs (and outputs) the memory plan laid out as one
  /// span each: they run with no scratch.
  std::set<ir::OpId> span_ops;
  /// Per main-graph op: the scratch bytes its kernel is bound with, worked out once by the
  /// memory plan (ops::scratch_bytes; 0 for span_ops) and read by the runtime.
  std::vector<size_t> op_scratch;
};

struct CompileOptions {
  int64_t micro_batches = 1;
  std::vector<int64_t> slots;          ///< per stage, from the schedule's analysis
  bool offload_optimizer_state = false;
  /// Roots of host-to-device stream tensors that the steps read in place from their queue
  /// buffers (StreamBinding): not planned in the arena of the stage that loads them (a
  /// stage that receives one from it keeps its copy in its slot region).
  std::set<ir::TensorId> in_place;
  /// Cap of a gradient bucket in bytes (gradient_buckets.h); 0: every all-reduce alone.
  size_t gradient_bucket_bytes = 0;
};

/// Builds the actions of one replica into `program` (its stages' actions, channels, homes,
/// offloaded state and accumulators), whose placement, micro_batches and training flag the
/// passes before it set; the "memory plan" pass (memory_planner.h) plans their memory
/// (passes.h; compile() there runs them all for a placed graph). Throws InvalidArgument naming the op or tensor when a
/// variable is used by two stages, a tensor flows backward against the pipeline, the
/// update step reads a per-micro-batch tensor of another stage or a non-float one while
/// accumulating several micro-batches, or an update op reads what the update of another
/// stage on the same device computes (the two updates run one after the other).
void build_actions(const ir::Graph& graph, const CompileOptions& options, Program& program);

/// True when device-to-host stream `stream` is copied by the update step (once per
/// iteration: its host array has no micro-batch dim) rather than once per micro-batch.
bool stored_by_update(const Program& program, ir::StreamId stream);

/// True when autodiff ran: the program has a backward pass and an update step, run once per
/// iteration of `gradient_accumulation` micro-batches, even when autodiff added no backward
/// op (the loss is a stream or a variable) or only update ops read the streams.
bool is_training(const ir::Graph& graph);

}  // namespace plexus::compile
