// The compile passes in order (passes.h).
#include "core/compile/passes.h"

#include <algorithm>
#include <array>

#include "core/compile/conv_pool_fusion.h"
#include "core/compile/gradient_buckets.h"
#include "core/compile/live_buffers.h"
#include "core/compile/memory_planner.h"
#include "core/compile/relu_fusion.h"
#include "core/compile/strategy.h"
#include "core/ir/error.h"
#include "core/ops/kernel_def.h"

namespace plexus::compile {

namespace {

/// The most micro-batches an inference program runs as one schedule. Device iterations
/// beyond it repeat the program (DeviceProgram's iterations), so that compiling, the
/// schedule and the channels do not grow with device_iterations: a session of 2^24
/// iterations took 23 s and 1.8 GB to create when the schedule held every micro-batch.
/// 4096 keeps a pipeline's fill and drain under 0.1 % of an iteration of 4 stages.
constexpr int64_t kMaxInferenceMicroBatches = 4096;

/// Iterations of an inference program of device_iterations d and gradient_accumulation g:
/// d / k for the largest k dividing d with k * g <= kMaxInferenceMicroBatches (1 at least).
int64_t inference_iterations(int64_t d, int64_t g) {
  for (int64_t k = std::min(d, std::max<int64_t>(1, kMaxInferenceMicroBatches / g)); k > 1; --k) {
    if (d % k == 0) return d / k;
  }
  return d;
}

void placement_pass(Compilation& c) {
  Program& p = c.program;
  p.placement = place(c.graph, c.request.stages);
  p.training = is_training(c.graph);
  const CompileRequest& r = c.request;
  c.iterations = p.training ? r.device_iterations : inference_iterations(r.device_iterations, r.gradient_accumulation);
  p.micro_batches = r.device_iterations / c.iterations * r.gradient_accumulation;
}

void schedule_pass(Compilation& c) {
  const Placement& pl = c.program.placement;
  const ScheduleProblem problem{pl.num_stages, pl.num_devices, pl.stage_device, c.program.micro_batches,
                                c.program.training};
  c.strategy_name = c.request.execution_strategy;
  if (c.strategy_name.empty() && pl.num_devices == 1) {
    c.strategy_name = "trivial";
    c.schedule = trivial_schedule(problem);
  } else {
    if (c.strategy_name.empty()) c.strategy_name = "pipelined";
    c.schedule = Strategy(c.strategy_name).schedule(problem, c.request.strategy_options);
  }
  c.analysis = check_schedule(problem, c.schedule, c.strategy_name);
  c.request.program.micro_batches = c.program.micro_batches;
  c.request.program.slots = c.analysis.slots;
}

void conv_pool_groups_pass(Compilation& c) { fuse_conv_pool_groups(c.graph, c.program.placement.op_stage); }

void relu_epilogues_pass(Compilation& c) { fuse_relu_epilogues(c.graph, c.program.placement.op_stage); }

void gradient_buckets_pass(Compilation& c) {
  fuse_gradient_buckets(c.graph, c.program.placement.op_stage, c.request.program.gradient_bucket_bytes);
}

/// Every op, the subgraphs' too, has a kernel; ops::kernel_def refuses, naming the op and
/// its type, one whose type has a schema and no kernel.
void kernels_pass(Compilation& c) {
  for (const ir::Op& op : c.graph.ops()) ops::kernel_def(op);
  for (size_t g = 1; g < c.graph.num_graphs(); ++g) {
    for (const ir::OpId o : c.graph.subgraph(static_cast<ir::GraphId>(g)).ops) ops::kernel_def(c.graph.op(o));
  }
}

void actions_pass(Compilation& c) { build_actions(c.graph, c.request.program, c.program); }

void memory_plan_pass(Compilation& c) { plan_program_memory(c.graph, c.request.program, c.program); }

/// "'name' N bytes (what it is)" of a buffer live at a device's planned peak.
std::string describe(const ir::Graph& g, const LiveBuffer& b) {
  const std::string what = b.persistent ? "persistent"
                                        : "stage " + std::to_string(b.stage) + ", " + std::to_string(b.copies) +
                                              " micro-batch slot(s)";
  return "'" + g.tensor(b.root).name + "' " + std::to_string(b.bytes) + " bytes (" + what + ")";
}

void memory_limit_pass(Compilation& c) {
  const size_t limit = c.request.device_memory_bytes;
  if (limit == 0) return;
  for (size_t d = 0; d < c.program.devices.size(); ++d) {
    const DevicePlan& p = c.program.devices[d];
    if (p.arena_bytes <= limit) continue;
    std::vector<LiveBuffer> live = live_buffers(c.graph, c.program, d);
    live.resize(std::min<size_t>(live.size(), 5));
    std::string largest;
    for (const LiveBuffer& b : live) largest += (largest.empty() ? "" : ", ") + describe(c.graph, b);
    ir::fail(ir::ErrorCode::OutOfDeviceMemory,
             "device " + std::to_string(d) + " needs " + std::to_string(p.arena_bytes) +
                 " bytes (variables, constants and accumulators " + std::to_string(p.persistent_bytes) +
                 ", planned peak " + std::to_string(p.planned_peak_bytes) +
                 ") but its capacity (device_memory_bytes) is " + std::to_string(limit) +
                 "; the largest tensors live at its peak: " + largest);
  }
}

constexpr std::array kPasses{
    Pass{"placement", placement_pass},
    Pass{"schedule", schedule_pass},
    Pass{"conv-pool groups", conv_pool_groups_pass},
    Pass{"relu epilogues", relu_epilogues_pass},
    Pass{"gradient buckets", gradient_buckets_pass},
    Pass{"kernels", kernels_pass},
    Pass{"actions", actions_pass},
    Pass{"memory plan", memory_plan_pass},
    Pass{"memory limit", memory_limit_pass},
};

}  // namespace

std::span<const Pass> passes() { return kPasses; }

void run_passes(Compilation& c) {
  for (const Pass& pass : kPasses) pass.run(c);
}

Program compile(ir::Graph& graph, const Placement& placement, const CompileOptions& options) {
  Compilation c{graph, {}, {}, {}, 1, {}, {}};
  c.request.program = options;
  c.program.placement = placement;
  c.program.micro_batches = options.micro_batches;
  c.program.training = is_training(graph);
  const auto first = std::find_if(kPasses.begin(), kPasses.end(), [](const Pass& p) { return p.name == "conv-pool groups"; });
  for (auto pass = first; pass != kPasses.end(); ++pass) pass->run(c);
  return c.program;
}

}  // namespace plexus::compile
