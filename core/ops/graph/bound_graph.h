// A subgraph's kernels bound to the buffers of a plan of its own (the body of a call or a
// repeat, core/ops/graph/call.cpp and repeat.cpp), and the per-device cache that binds each
// graph once, however many call sites run it (code reuse, as an IPU loads a called graph's
// code once: PopXL user guide, "Graphs").
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/ir/graph.h"
#include "core/ops/kernel_context.h"

namespace plexus::ops {

/// A copy of `bytes` bytes from one buffer to another.
struct Copy {
  const std::byte* from;
  std::byte* to;
  size_t bytes;
  void operator()() const;
};

void run_all(const std::vector<Copy>& copies);
void run_all(const std::vector<Kernel>& kernels);

/// Where a graph's buffers lie, from some base: one per storage root, by the graph's
/// liveness (position 0: the inputs are filled; op k runs at k + 1; the outputs are read
/// at the last position), or each its own with `keep_all` (a gradient reads them after
/// the run); then the ops' shared scratch. `bytes` in all.
struct BodyPlan {
  std::vector<ir::OpId> ops;
  std::vector<size_t> op_scratch;          ///< per op of `ops`: its scratch bytes (ops::scratch_bytes)
  std::map<ir::TensorId, size_t> offset;  ///< storage root -> offset
  size_t op_scratch_offset = 0;
  size_t bytes = 0;
};

BodyPlan plan_body(const ir::Graph& graph, const ir::Subgraph& body, bool keep_all);

/// A graph's kernels bound once to the buffers of its plan at `base`, and the copies that
/// put its constants in place before a run (the base is op scratch, which other ops share).
/// Running it (constants, then kernels) is not thread-safe: a device runs one op at a time.
struct BoundGraph {
  const ir::Graph* graph = nullptr;
  BodyPlan plan;
  std::byte* base = nullptr;
  std::vector<Kernel> kernels;
  std::vector<Copy> constants;

  /// The buffer of tensor t of the graph.
  std::byte* at(ir::TensorId t) const { return base + plan.offset.at(graph->storage_root(t)); }
};

/// The graphs bound on one device (KernelContext::graph_bindings), each once per base:
/// every call site of a graph on the device runs the same kernels, at the device's scratch
/// area, which the call sites take in turn (a device runs one op at a time). Owned by the
/// device program; used while its kernels are bound, from one thread.
class GraphBindings {
 public:
  /// The kernels of graph `g` bound at `base` for `ctx`'s device (keep_all: as plan_body),
  /// bound on first use. The result is shared with every later caller of the same key.
  std::shared_ptr<const BoundGraph> bind(const KernelContext& ctx, ir::GraphId g, bool keep_all, std::byte* base);
  /// How many graph bindings were made (one per graph, keep_all and base).
  size_t size() const { return bound_.size(); }

 private:
  std::map<std::tuple<ir::GraphId, bool, std::byte*>, std::shared_ptr<const BoundGraph>> bound_;
};

/// The kernels of graph `g` bound at `base`: through ctx.graph_bindings when the context
/// has one (bound once per device), else bound for this op alone.
std::shared_ptr<const BoundGraph> bind_graph(const KernelContext& ctx, ir::GraphId g, bool keep_all, std::byte* base);

}  // namespace plexus::ops
