// A graph compiled as a session compiles it for one stage on one device (the trivial
// schedule), for the tests of the runtime pieces under the session.
#pragma once

#include "core/compile/placement.h"
#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/compile/schedule.h"
#include "core/ir/graph.h"

namespace plexus::runtime::testing {

/// The program of `graph` on one stage (one micro-batch per run unless `options` say more).
inline compile::Program compile_one_stage(ir::Graph& graph, const compile::CompileOptions& options = {}) {
  const compile::Placement placement = compile::place(graph, {});
  compile::Program program = compile::compile(graph, placement, options);
  program.training = compile::is_training(graph);
  return program;
}

/// The trivial schedule of a one-stage program.
inline compile::Schedule one_stage_schedule(const compile::Program& program) {
  return compile::trivial_schedule({1, 1, {0}, program.micro_batches, program.training});
}

}  // namespace plexus::runtime::testing
