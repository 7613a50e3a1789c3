// The IR: tensors, ops and host/device streams of one program. Ops are appended in a
// valid topological order (an op's inputs exist before it), shapes and dtypes are
// inferred and checked as each op is added.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ir/attributes.h"
#include "core/ir/op_schema.h"
#include "core/ir/subgraph.h"
#include "core/ir/tensor.h"

namespace plexus::ir {

/// Which part of a training step an op belongs to (seed 003): the forward pass, the
/// backward pass autodiff generates, or the weight update (ops added after autodiff).
enum class Phase : int32_t { Forward = 0, Backward = 1, Update = 2 };

/// A named block of ops (PopTorch poptorch.Block), optionally pinned to a device.
struct Block {
  std::string name;
  int64_t device = -1;  ///< -1: placed by the session's stages
};

/// One op instance.
struct Op {
  const OpSchema* schema = nullptr;  ///< the op's type (its kernel: ops::kernel_def)
  std::string name;  ///< "<type>#<index>", used in messages
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  Attributes attrs;
  Phase phase = Phase::Forward;
  int32_t block = -1;  ///< index into Graph::blocks(); -1 when the IR has no blocks
  GraphId graph = kMainGraph;  ///< the graph the op belongs to
};

/// Ids of subgraph ops start here: Graph::ops() and num_ops() are the main graph's ops
/// (what a session compiles), Graph::op() finds either.
inline constexpr OpId kSubgraphOpBase = OpId{1} << 30;

/// A program under construction (PopXL's Ir): the main graph, its variables, streams and
/// remote buffers, and subgraphs (core/ir/subgraph.h) that graphs call. Copyable: a session compiles its own copy, so the IR may
/// be changed or destroyed afterwards. Each Graph has a process-unique tag, kept by copies,
/// that the C API folds into tensor and stream ids to catch ids from another IR.
/// Not thread-safe.
class Graph {
 public:
  Graph();

  uint32_t tag() const { return tag_; }

  /// Number of replicas R (PopXL ir.replication_factor). Set it before adding tensors:
  /// variables' host data and ops' shapes depend on it. Throws InvalidArgument otherwise.
  void set_replication_factor(int64_t replication_factor);
  int64_t replication_factor() const { return replication_factor_; }

  /// Adds a variable. `data` holds one value per group of `grouping` (default: one group
  /// of all replicas): [num_groups] + shape, exactly num_groups * numel * dtype_size bytes.
  /// Names are unique among variables and streams.
  TensorId add_variable(const std::string& name, DType dtype, Shape shape, std::vector<std::byte> data,
                        std::optional<ReplicaGrouping> grouping = std::nullopt,
                        RetrievalMode retrieval = RetrievalMode::OnePerGroup);
  TensorId add_constant(DType dtype, Shape shape, std::vector<std::byte> data);

  /// Adds a remote buffer of `entries` slots of `shape` and `dtype` per replica.
  RemoteBufferId add_remote_buffer(DType dtype, Shape shape, int64_t entries);
  /// A variable living in slot `entry` of `buffer` (PopXL remote_variable): `data` is
  /// [num_groups] + the slot shape, each replica's slot starts from its group's row.
  TensorId add_remote_variable(const std::string& name, DType dtype, Shape shape, std::vector<std::byte> data,
                               RemoteBufferId buffer, int64_t entry, std::optional<ReplicaGrouping> grouping,
                               RetrievalMode retrieval);
  /// A replica-sharded variable (PopXL replica_sharded_variable): `data` is [num_groups] +
  /// the full shape; each replica keeps its shard, [ceil(numel / shard_over)], on its device.
  /// shard_over 0 means the grouping's group size; it must divide the group size. The
  /// returned tensor is both the variable and this replica's shard.
  TensorId add_replica_sharded_variable(const std::string& name, DType dtype, Shape full_shape,
                                        std::vector<std::byte> data, std::optional<ReplicaGrouping> grouping,
                                        RetrievalMode retrieval, int64_t shard_over);
  /// A replica-sharded variable kept in slot `entry` of `buffer`, whose slot shape must be
  /// the shard's (PopXL remote_replica_sharded_variable). The buffer then carries the
  /// sharding: remote_load from it yields shards that all-gather to the full shape.
  TensorId add_remote_replica_sharded_variable(const std::string& name, DType dtype, Shape full_shape,
                                               std::vector<std::byte> data, RemoteBufferId buffer, int64_t entry,
                                               std::optional<ReplicaGrouping> grouping, RetrievalMode retrieval,
                                               int64_t shard_over);
  const RemoteBuffer& remote_buffer(RemoteBufferId id) const;
  const std::vector<RemoteBuffer>& remote_buffers() const { return remote_buffers_; }

  /// Block scopes (PopTorch poptorch.Block): ops added inside belong to the block; blocks
  /// are grouped into stages placed on devices by the session. Opening a block with a name
  /// seen before reopens it (its device must agree). Outside any block an op takes the
  /// block of its first input that has one, so gradient and update ops follow the layers
  /// they belong to. Throws InvalidArgument for an empty name, a device < -1 or a device
  /// that disagrees, and end_block() without a block.
  void begin_block(const std::string& name, int64_t device);
  void end_block();
  const std::vector<Block>& blocks() const { return blocks_; }

  /// The phase ops added now get: Forward until autodiff runs, Backward while autodiff
  /// adds gradient ops, Update afterwards (autodiff.cpp drives it).
  void set_phase(Phase phase) { phase_ = phase; }
  Phase phase() const { return phase_; }
  /// Makes ops added next belong to `block` (autodiff: a gradient op joins the block of the
  /// op it differentiates); -1 restores the default rule. Returns the block it replaces, for
  /// the caller to restore (a gradient rule may run autodiff of a subgraph, which sets it too).
  int32_t set_implicit_block(int32_t block) { return std::exchange(implicit_block_, block); }

  /// in_sequence scopes (seed 001, listing 13.2), per graph: they apply to the current
  /// graph. Plexus runs a graph's ops in the order they were added, so every op is in
  /// sequence; the scopes are checked for balance so that PopXL programs port unchanged.
  /// end_in_sequence() without a begin in the current graph is InvalidArgument.
  void begin_in_sequence() { ++sequence_depth(); }
  void end_in_sequence();
  int in_sequence_depth() const;

  // ---- Graphs (PopXL user guide, "Graphs"; core/ir/subgraph.h) ----

  /// Creates an empty subgraph. Its name is unique among the IR's graphs ("main" is the
  /// main graph's). Throws InvalidArgument for an empty or taken name.
  GraphId create_subgraph(const std::string& name);
  /// The main graph and the subgraphs.
  size_t num_graphs() const { return 1 + subgraphs_.size(); }
  /// Throws NotFound for no such graph and InvalidArgument for the main graph (it has no
  /// inputs or outputs).
  const Subgraph& subgraph(GraphId g) const;
  /// "main" or the subgraph's name; NotFound for no such graph.
  const std::string& graph_name(GraphId g) const;
  /// Graph scopes (PopXL `with graph:`): ops, constants and in_sequence scopes go to the
  /// innermost open graph, the main graph outside any. Throws NotFound for no such graph,
  /// InvalidArgument for end_graph() without a begin.
  void begin_graph(GraphId g);
  void end_graph();
  GraphId current_graph() const { return graph_stack_.empty() ? kMainGraph : graph_stack_.back(); }
  /// Appends an input of `dtype` and `shape` to subgraph g (PopXL popxl.graph_input).
  TensorId add_graph_input(GraphId g, const std::string& name, DType dtype, Shape shape);
  /// Appends tensor t of subgraph g to its outputs (PopXL popxl.graph_output). Throws
  /// InvalidArgument when t belongs to another graph.
  void add_graph_output(GraphId g, TensorId t);
  /// Marks subgraph g as the gradient of another graph (graph autodiff).
  void set_grad_of(GraphId g, GradOf info);
  /// The ops of graph g in the order they run.
  std::vector<OpId> graph_ops(GraphId g) const;
  /// Call sites (core/ir/call.h records them).
  int32_t add_call_site(CallSite site);
  const CallSite& call_site(int32_t id) const;
  /// Marks input `input` of call site `id` modified after the call was added (PopXL
  /// CallSiteInfo.set_parent_input_modified): the caller's ops that read the copy the call
  /// made of the argument read the argument itself, so the callee's in-place writes reach
  /// it, as if ir::call had been given the flag (the copy op stays, unread). Throws
  /// NotFound (no such site) and InvalidArgument (no such input).
  void set_call_input_modified(int32_t id, size_t input);
  size_t num_call_sites() const { return call_sites_.size(); }
  /// Whether graph `from` calls (or repeats) graph `to`, directly or through other graphs.
  bool calls(GraphId from, GraphId to) const;
  /// The graphs graph g calls or repeats directly.
  std::vector<GraphId> callees(GraphId g) const;

  /// Capture (graph autodiff): until the matching end_capture(), an op added to the graph
  /// that was current at begin_capture() that reads a tensor of graph `from` reads instead
  /// an input of that graph made for it on first use (named after it); end_capture()
  /// returns those tensors of `from` in the order their inputs were made. Captures nest
  /// (the gradient of a repeat inside a graph being differentiated).
  void begin_capture(GraphId from);
  std::vector<TensorId> end_capture();
  /// Adds a host-to-device stream and the tensor it fills each step (main graph only).
  StreamId add_h2d_stream(const std::string& name, DType dtype, Shape shape);
  /// Adds a device-to-host stream that copies `tensor` to the host each step. Throws
  /// InvalidArgument for a remote variable (it is not on the device: remote_load it).
  StreamId add_d2h_stream(const std::string& name, TensorId tensor);
  /// Adds an op by registered name; returns its outputs. Throws UnknownOp, InvalidArgument
  /// (input count, attributes), ShapeMismatch / DTypeMismatch (inference), NotFound (ids).
  std::vector<TensorId> add_op(std::string_view type, std::vector<TensorId> inputs, Attributes attrs);
  /// A compile rewrite (core/compile/passes.h): main-graph op `id` runs registered op
  /// `type` instead, with the same inputs, attributes and outputs; a view op's output
  /// becomes its input's storage. Throws UnknownOp, NotFound, Internal when `type` does not
  /// infer the op's output types from its inputs (a rewrite must not change them).
  void rewrite_op(OpId id, std::string_view type);
  /// A compile rewrite (core/compile/passes.h): main-graph ops `ops` (ascending, at least
  /// one) become one op of registered type `type`, reading `inputs` with `attrs` and
  /// writing `outputs` (tensors the ops wrote, whose types `type` must infer), at the first
  /// op's place, in its phase and block. The other ops are removed: later ops' ids and
  /// streams' after_ops shift down. The ops' other outputs are left with no producer and
  /// no reader. Throws UnknownOp, InvalidArgument (input count, attributes), NotFound,
  /// Internal (ops not ascending, an output not theirs, another output read or streamed
  /// elsewhere, `type` inferring other output types).
  void fuse_ops(const std::vector<OpId>& ops, std::string_view type, std::vector<TensorId> inputs, Attributes attrs,
                std::vector<TensorId> outputs);

  const TensorInfo& tensor(TensorId id) const;
  const Op& op(OpId id) const;
  const Stream& stream(StreamId id) const;
  size_t num_tensors() const { return tensors_.size(); }
  size_t num_ops() const { return ops_.size(); }
  size_t num_streams() const { return streams_.size(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Stream>& streams() const { return streams_; }

  /// The tensor whose buffer `id` uses (follows alias_of to the end).
  TensorId storage_root(TensorId id) const;
  /// Ops that read `id` as an input, in creation order.
  std::vector<OpId> consumers(TensorId id) const;
  /// Whether a stream carries `id`: it is a stream's own tensor, or copied to the host.
  bool streamed(TensorId id) const;
  /// Variable or stream tensor by name.
  std::optional<TensorId> find_named(const std::string& name) const;

  /// Sizes of the IR at one moment; rollback() removes everything added after it, so a
  /// multi-op change (autodiff) is all or nothing.
  struct Mark {
    size_t tensors, ops, streams, remote_buffers, sub_ops, subgraphs, call_sites;
    Phase phase;
  };
  Mark mark() const;
  void rollback(const Mark& m);


 private:
  TensorId add_tensor(TensorInfo info);
  /// Checks name, shape and grouping of a new variable and returns its grouping.
  ReplicaGrouping check_variable(const std::string& what, const std::string& name, const Shape& shape,
                                 std::optional<ReplicaGrouping> grouping, RetrievalMode retrieval) const;
  Sharding make_sharding(const std::string& what, const Shape& full_shape, const ReplicaGrouping& grouping,
                         int64_t shard_over) const;
  void check_slot(const std::string& what, RemoteBufferId buffer, int64_t entry, DType dtype, const Shape& shape) const;
  void check_unique_name(const std::string& name, const std::string& what) const;
  void check_data_size(const std::string& what, DType dtype, const Shape& shape, size_t bytes,
                       int64_t copies = 1) const;
  /// Throws InvalidArgument, naming `what`, unless the current graph is the main graph.
  void require_main_graph(const std::string& what) const;
  /// `inputs` of an op added to the current graph: each checked to exist and to belong to
  /// it (or captured, begin_capture).
  std::vector<TensorId> resolve_inputs(const OpSchema& schema, std::vector<TensorId> inputs);
  /// `op`'s shape inference, checked to give `outputs`' types (`what` names the rewrite).
  void infer_onto(const Op& op, const std::vector<TensorId>& outputs, const std::string& what) const;
  void check_fusable(const std::vector<OpId>& ops, const std::vector<TensorId>& outputs) const;
  /// Erases main-graph ops `gone` (ascending), shifting producers and streams' after_ops.
  void remove_ops(const std::vector<OpId>& gone);
  int& sequence_depth();
  Subgraph& subgraph_mut(GraphId g);

  uint32_t tag_;
  int64_t replication_factor_ = 1;
  std::vector<TensorInfo> tensors_;
  std::vector<Op> ops_;
  std::vector<Stream> streams_;
  std::vector<RemoteBuffer> remote_buffers_;
  int in_sequence_depth_ = 0;
  std::vector<Block> blocks_;
  std::vector<int32_t> block_stack_;
  int32_t implicit_block_ = -1;
  Phase phase_ = Phase::Forward;
  std::vector<Subgraph> subgraphs_;  ///< graph g is subgraphs_[g - 1]
  std::vector<Op> sub_ops_;          ///< op kSubgraphOpBase + i is sub_ops_[i]
  std::vector<GraphId> graph_stack_;
  std::vector<CallSite> call_sites_;
  struct Capture {
    GraphId from;
    GraphId into;
    std::map<TensorId, TensorId> input_of;  ///< tensor of `from` -> input of `into`
    std::vector<TensorId> order;
  };
  std::vector<Capture> captures_;  ///< innermost last

  /// The block a new op with these inputs joins.
  int32_t block_for(const std::vector<TensorId>& inputs) const;
};

}  // namespace plexus::ir
