// A graph compiled as a session compiles it for one stage on one device (the trivial
// schedule), for the tests of the runtime pieces under the session.
#pragma once

#include "core/compile/placement.h"
#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/compile/schedule.h"
#include "core/ir/graph.h"

namespace plexus::runtime::testing {

/// The program of `graph` on one stage, one micro-batch per run.
inline Program compile_one_stage(ir::Graph& graph) {
  const Placement placement = place(graph, {});
  Program program = compile(graph, placement, {1, {1}, false, {}});
  program.training = is_training(graph);
  return program;
}

/// The trivial schedule of a one-stage program.
inline Schedule one_stage_schedule(const Program& program) {
  return trivial_schedule({1, 1, {0}, program.micro_batches, program.training});
}

}  // namespace plexus::runtime::testing
