// The memory plan of a program (the "memory plan" compile pass, passes.h): after the
// actions are built (program.h), each stage's slot region is planned over its timeline
// [forward | backward | update] by liveness (core/memory/memory_plan.h): a buffer per
// storage root from its first to its last touch, an op's output taking a dying input's
// buffer when the op allows it (ops::KernelDef::may_inplace), the inputs and outputs of an op
// with ops::KernelDef::span_inputs laid out as one span each where they own their buffers
// (Program::span_ops); then each device's arena: the persistent block (variables, constants,
// accumulators), the scratch of its largest op, and every stage's slot regions, one per
// micro-batch slot.
#pragma once

#include "core/compile/program.h"
#include "core/ir/graph.h"

namespace plexus::compile {

/// Fills every StagePlan's slot_offset, slot_live, in_place_last_use, slot_plan and
/// slot_pieces, Program::span_ops and Program::devices of `program`, whose actions
/// build_actions made. Pure function of its arguments; does not throw for a program
/// build_actions made.
void plan_program_memory(const ir::Graph& graph, const CompileOptions& options, Program& program);

}  // namespace plexus::compile
