// The compile step of a session as an ordered list of passes (docs/design.md "Data flow"),
// each a function from what the passes before it made to its own part of a Compilation:
//
//   placement          blocks -> stages -> devices                  placement.h
//   schedule           the strategy's per-device steps, checked     strategy.h, schedule.h
//   conv-pool groups   rewrite: conv -> relu -> max-pool fused ops  conv_pool_fusion.h
//   relu epilogues     rewrite: <op>_relu + alias                   relu_fusion.h
//   gradient buckets   rewrite: all-reduces -> bucket ops           gradient_buckets.h
//   kernels            every op's type has a kernel                 core/ops/kernel_def.h
//   actions            per-stage actions, channels, homes           program.h
//   memory plan        slot regions by liveness, device arenas      memory_planner.h
//   memory limit       a device's arena against its capacity        passes.cpp
//
// Adding a pass is one entry in passes() and one file. Tests and tools that bring their own
// placement run the passes from "conv-pool groups" on (compile()).
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/compile/placement.h"
#include "core/compile/program.h"
#include "core/compile/schedule.h"
#include "core/ir/graph.h"

namespace plexus::compile {

/// What a session asks of the compile step (from its SessionOptions).
struct CompileRequest {
  std::vector<StageSpec> stages;         ///< blocks -> stages -> devices; empty: one stage
  std::string execution_strategy;        ///< empty: "trivial" on one device, else "pipelined"
  std::string strategy_options;          ///< passed to the strategy plugin
  int64_t device_iterations = 1;
  int64_t gradient_accumulation = 1;
  CompileOptions program;                ///< micro_batches and slots are filled by the passes
  size_t device_memory_bytes = 0;        ///< arena capacity per device; 0 = no limit
};

/// A compilation in progress: the request, then what each pass makes. The graph is the
/// session's own copy, which the rewrite passes change.
struct Compilation {
  ir::Graph& graph;
  CompileRequest request;
  std::string strategy_name;  ///< the strategy that made the schedule
  Schedule schedule;
  int64_t iterations = 1;     ///< schedule iterations per run
  ScheduleAnalysis analysis;
  Program program;
};

/// One pass: a name (for messages and tests) and its function.
struct Pass {
  std::string_view name;
  void (*run)(Compilation&);
};

/// The passes in order (above).
std::span<const Pass> passes();

/// Runs every pass on `c`. Throws what the passes throw: ir::Error naming the op, tensor,
/// stage or device (placement, program), the strategy's ir::Error(Plugin), Unsupported
/// naming an op whose type has a schema but no kernel (kernels), and OutOfDeviceMemory
/// (memory limit).
void run_passes(Compilation& c);

/// The passes from "conv-pool groups" on, for a graph already placed: the program of one
/// replica. Throws as program.h's build_actions does.
Program compile(ir::Graph& graph, const Placement& placement, const CompileOptions& options);

}  // namespace plexus::compile
