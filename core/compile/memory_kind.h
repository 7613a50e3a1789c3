// What a buffer of a device's memory holds, for the memory report (docs/profiling.md):
// the kinds PopVision's memory view splits a device's bytes into, from the graph alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "core/ir/graph.h"

namespace plexus::compile {

enum class MemoryKind : uint8_t {
  Variables = 0,       ///< variables and constants (weights, biases, ...)
  Activations = 1,     ///< forward-pass tensors (and a subgraph's inputs)
  Gradients = 2,       ///< tensors of the backward pass and of the update computed from them
  OptimizerState = 3,  ///< inputs an optimizer op marks as its state (moments, step counters)
  StreamSlots = 4,     ///< tensors filled from host-to-device streams
  Scratch = 5,         ///< the device's kernel scratch area
};

inline constexpr size_t kNumMemoryKinds = 6;

/// "variables", "activations", "gradients", "optimizer_state", "stream_slots", "scratch".
std::string_view memory_kind_name(MemoryKind kind);

/// The kinds in order, 0 .. kNumMemoryKinds - 1.
std::array<MemoryKind, kNumMemoryKinds> memory_kinds();

/// Storage roots of the inputs that optimizer ops mark as their state
/// (ir::OpSchema::optimizer_state_inputs: adamw's m, v and step; sgd's momentum and step).
std::set<ir::TensorId> optimizer_state_roots(const ir::Graph& graph);

/// The kind of storage root `root` of `graph`: optimizer state when in `optimizer_state`
/// (optimizer_state_roots()); else variables for a variable, remote variable or constant;
/// stream slots for a host-to-device stream's tensor; gradients for the output of a
/// backward-pass op (autodiff's) or of an update op (reduced, accumulated, scaled
/// gradients); activations for the rest. Pure. Throws NotFound for an unknown id.
MemoryKind memory_kind(const ir::Graph& graph, ir::TensorId root, const std::set<ir::TensorId>& optimizer_state);

}  // namespace plexus::compile
