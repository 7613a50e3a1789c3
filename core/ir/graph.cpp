#include "core/ir/graph.h"

#include <algorithm>
#include <atomic>

#include "core/ir/error.h"

namespace plexus::ir {

namespace {
std::atomic<uint32_t> next_tag{1};
}

Graph::Graph() : tag_(next_tag.fetch_add(1)) {}

TensorId Graph::add_tensor(TensorInfo info) {
  tensors_.push_back(std::move(info));
  return static_cast<TensorId>(tensors_.size() - 1);
}

void Graph::check_unique_name(const std::string& name, const std::string& what) const {
  if (name.empty()) fail(ErrorCode::InvalidArgument, what + ": name must not be empty");
  if (find_named(name)) {
    fail(ErrorCode::InvalidArgument, what + " '" + name + "': a variable or stream with this name already exists");
  }
}

void Graph::check_data_size(const std::string& what, DType dtype, const Shape& shape, size_t bytes,
                            int64_t copies) const {
  const size_t expected = static_cast<size_t>(copies * numel(shape)) * dtype_size(dtype);
  if (bytes != expected) {
    Shape host = shape;
    if (copies > 1) host.insert(host.begin(), copies);
    fail(ErrorCode::InvalidArgument, what + ": host data is " + std::to_string(bytes) + " bytes, expected " +
                                         std::to_string(expected) + " for " + std::string(dtype_name(dtype)) +
                                         shape_string(host) + (copies > 1 ? " ([num_groups] + shape)" : ""));
  }
}

void Graph::set_replication_factor(int64_t replication_factor) {
  if (replication_factor < 1) {
    fail(ErrorCode::InvalidArgument, "replication factor " + std::to_string(replication_factor) + " must be >= 1");
  }
  if (!tensors_.empty() && replication_factor != replication_factor_) {
    fail(ErrorCode::InvalidArgument, "set the replication factor before adding tensors (the IR already has " +
                                         std::to_string(tensors_.size()) + ")");
  }
  replication_factor_ = replication_factor;
}

namespace {

// A variable-like tensor (device, remote or sharded): its value per group and how it reads back.
TensorInfo variable_tensor(const std::string& name, DType dtype, Shape shape, TensorKind kind,
                           std::vector<std::byte> data, const ReplicaGrouping& grouping, RetrievalMode retrieval) {
  TensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.kind = kind;
  t.data = std::move(data);
  t.grouping = grouping;
  t.retrieval = retrieval;
  return t;
}

}  // namespace

ReplicaGrouping Graph::check_variable(const std::string& what, const std::string& name, const Shape& shape,
                                      std::optional<ReplicaGrouping> grouping, RetrievalMode retrieval) const {
  check_unique_name(name, "variable");
  check_shape(shape, what);
  const ReplicaGrouping g = grouping.value_or(ReplicaGrouping::all(replication_factor_));
  if (g.replication_factor() != replication_factor_) {
    fail(ErrorCode::InvalidGrouping, what + ": " + g.to_string() + " is for another replication factor than the IR's " +
                                         std::to_string(replication_factor_));
  }
  if (retrieval != RetrievalMode::OnePerGroup && retrieval != RetrievalMode::AllReplicas) {
    fail(ErrorCode::InvalidArgument, what + ": retrieval mode " + std::to_string(static_cast<int>(retrieval)) +
                                         " is not one_per_group (0) or all_replicas (1)");
  }
  return g;
}

Sharding Graph::make_sharding(const std::string& what, const Shape& full_shape, const ReplicaGrouping& grouping,
                              int64_t shard_over) const {
  const int64_t over = shard_over == 0 ? grouping.group_size() : shard_over;
  if (over < 1 || grouping.group_size() % over != 0) {
    fail(ErrorCode::InvalidGrouping, what + ": shard_over " + std::to_string(shard_over) +
                                         " must divide the group size of " + grouping.to_string());
  }
  return Sharding{full_shape, over, grouping.stride()};
}

void Graph::check_slot(const std::string& what, RemoteBufferId buffer, int64_t entry, DType dtype,
                       const Shape& shape) const {
  const RemoteBuffer& b = remote_buffer(buffer);
  if (entry < 0 || entry >= b.entries) {
    fail(ErrorCode::InvalidArgument, what + ": entry " + std::to_string(entry) + " is outside [0, " +
                                         std::to_string(b.entries) + ") of remote buffer " + std::to_string(buffer));
  }
  if (b.dtype != dtype || b.shape != shape) {
    fail(ErrorCode::ShapeMismatch, what + ": remote buffer " + std::to_string(buffer) + " holds " +
                                       std::string(dtype_name(b.dtype)) + shape_string(b.shape) + " slots, the variable needs " +
                                       std::string(dtype_name(dtype)) + shape_string(shape));
  }
}

TensorId Graph::add_variable(const std::string& name, DType dtype, Shape shape, std::vector<std::byte> data,
                             std::optional<ReplicaGrouping> grouping, RetrievalMode retrieval) {
  const std::string what = "variable '" + name + "'";
  require_main_graph(what);
  const ReplicaGrouping g = check_variable(what, name, shape, grouping, retrieval);
  check_data_size(what, dtype, shape, data.size(), g.num_groups());
  return add_tensor(variable_tensor(name, dtype, std::move(shape), TensorKind::Variable, std::move(data), g, retrieval));
}

RemoteBufferId Graph::add_remote_buffer(DType dtype, Shape shape, int64_t entries) {
  const std::string what = "remote buffer " + std::to_string(remote_buffers_.size());
  check_shape(shape, what);
  if (entries < 1) fail(ErrorCode::InvalidArgument, what + ": entries is " + std::to_string(entries) + ", must be >= 1");
  remote_buffers_.push_back(RemoteBuffer{std::move(shape), dtype, entries, std::nullopt});
  return static_cast<RemoteBufferId>(remote_buffers_.size() - 1);
}

const RemoteBuffer& Graph::remote_buffer(RemoteBufferId id) const {
  if (id < 0 || static_cast<size_t>(id) >= remote_buffers_.size()) {
    fail(ErrorCode::NotFound, "remote buffer " + std::to_string(id) + " does not exist (the IR has " +
                                  std::to_string(remote_buffers_.size()) + ")");
  }
  return remote_buffers_[static_cast<size_t>(id)];
}

TensorId Graph::add_remote_variable(const std::string& name, DType dtype, Shape shape, std::vector<std::byte> data,
                                    RemoteBufferId buffer, int64_t entry, std::optional<ReplicaGrouping> grouping,
                                    RetrievalMode retrieval) {
  const std::string what = "remote variable '" + name + "'";
  require_main_graph(what);
  const ReplicaGrouping g = check_variable(what, name, shape, grouping, retrieval);
  check_slot(what, buffer, entry, dtype, shape);
  if (remote_buffer(buffer).sharding) {
    fail(ErrorCode::InvalidArgument, what + ": remote buffer " + std::to_string(buffer) +
                                         " holds replica-sharded variables; use a replica-sharded variable");
  }
  check_data_size(what, dtype, shape, data.size(), g.num_groups());
  TensorInfo t =
      variable_tensor(name, dtype, std::move(shape), TensorKind::RemoteVariable, std::move(data), g, retrieval);
  t.remote_buffer = buffer;
  t.remote_entry = entry;
  return add_tensor(std::move(t));
}

TensorId Graph::add_replica_sharded_variable(const std::string& name, DType dtype, Shape full_shape,
                                             std::vector<std::byte> data, std::optional<ReplicaGrouping> grouping,
                                             RetrievalMode retrieval, int64_t shard_over) {
  const std::string what = "replica-sharded variable '" + name + "'";
  require_main_graph(what);
  const ReplicaGrouping g = check_variable(what, name, full_shape, grouping, retrieval);
  const Sharding sharding = make_sharding(what, full_shape, g, shard_over);
  check_data_size(what, dtype, full_shape, data.size(), g.num_groups());
  TensorInfo t = variable_tensor(name, dtype, {sharding.shard_elements()}, TensorKind::Variable, std::move(data), g,
                                 retrieval);
  t.sharding = sharding;
  return add_tensor(std::move(t));
}

TensorId Graph::add_remote_replica_sharded_variable(const std::string& name, DType dtype, Shape full_shape,
                                                    std::vector<std::byte> data, RemoteBufferId buffer, int64_t entry,
                                                    std::optional<ReplicaGrouping> grouping, RetrievalMode retrieval,
                                                    int64_t shard_over) {
  const std::string what = "remote replica-sharded variable '" + name + "'";
  require_main_graph(what);
  const ReplicaGrouping g = check_variable(what, name, full_shape, grouping, retrieval);
  const Sharding sharding = make_sharding(what, full_shape, g, shard_over);
  const Shape shard_shape{sharding.shard_elements()};
  check_slot(what, buffer, entry, dtype, shard_shape);
  const std::optional<Sharding>& bound = remote_buffer(buffer).sharding;
  if (bound && !(*bound == sharding)) {
    fail(ErrorCode::InvalidArgument, what + ": remote buffer " + std::to_string(buffer) + " already holds shards of " +
                                         shape_string(bound->full_shape) + " over " + std::to_string(bound->shard_over) +
                                         " replicas");
  }
  check_data_size(what, dtype, full_shape, data.size(), g.num_groups());
  remote_buffers_[static_cast<size_t>(buffer)].sharding = sharding;
  TensorInfo t = variable_tensor(name, dtype, shard_shape, TensorKind::RemoteVariable, std::move(data), g, retrieval);
  t.sharding = sharding;
  t.remote_buffer = buffer;
  t.remote_entry = entry;
  return add_tensor(std::move(t));
}

void Graph::begin_block(const std::string& name, int64_t device) {
  if (name.empty()) fail(ErrorCode::InvalidArgument, "block: the name must not be empty");
  require_main_graph("block '" + name + "'");
  if (device < -1) {
    fail(ErrorCode::InvalidArgument, "block '" + name + "': device " + std::to_string(device) + " must be >= 0 (or -1)");
  }
  for (size_t b = 0; b < blocks_.size(); ++b) {
    if (blocks_[b].name != name) continue;
    if (blocks_[b].device != device) {
      fail(ErrorCode::InvalidArgument, "block '" + name + "' was opened with device " + std::to_string(blocks_[b].device) +
                                           ", now with device " + std::to_string(device));
    }
    block_stack_.push_back(static_cast<int32_t>(b));
    return;
  }
  blocks_.push_back(Block{name, device});
  block_stack_.push_back(static_cast<int32_t>(blocks_.size() - 1));
}

void Graph::end_block() {
  if (block_stack_.empty()) fail(ErrorCode::InvalidArgument, "block: end without a matching begin");
  block_stack_.pop_back();
}

int32_t Graph::block_for(const std::vector<TensorId>& inputs) const {
  if (!block_stack_.empty()) return block_stack_.back();
  if (implicit_block_ >= 0) return implicit_block_;
  for (TensorId in : inputs) {
    const OpId producer = tensors_[static_cast<size_t>(in)].producer;
    if (producer >= 0 && ops_[static_cast<size_t>(producer)].block >= 0) return ops_[static_cast<size_t>(producer)].block;
  }
  return blocks_.empty() ? -1 : 0;
}

int& Graph::sequence_depth() {
  const GraphId g = current_graph();
  return g == kMainGraph ? in_sequence_depth_ : subgraph_mut(g).in_sequence_depth;
}

int Graph::in_sequence_depth() const {
  const GraphId g = current_graph();
  return g == kMainGraph ? in_sequence_depth_ : subgraph(g).in_sequence_depth;
}

void Graph::end_in_sequence() {
  int& depth = sequence_depth();
  if (depth == 0) {
    fail(ErrorCode::InvalidArgument, "in_sequence: end without a matching begin in graph '" +
                                         graph_name(current_graph()) + "'");
  }
  --depth;
}

TensorId Graph::add_constant(DType dtype, Shape shape, std::vector<std::byte> data) {
  const std::string name = "constant#" + std::to_string(tensors_.size());
  check_shape(shape, name);
  check_data_size(name, dtype, shape, data.size());
  TensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.kind = TensorKind::Constant;
  t.data = std::move(data);
  t.graph = current_graph();
  return add_tensor(std::move(t));
}

StreamId Graph::add_h2d_stream(const std::string& name, DType dtype, Shape shape) {
  require_main_graph("stream '" + name + "'");
  check_unique_name(name, "stream");
  check_shape(shape, "stream '" + name + "'");
  TensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.kind = TensorKind::StreamInput;
  const TensorId tensor_id = add_tensor(std::move(t));
  streams_.push_back(Stream{name, StreamDirection::HostToDevice, tensor_id, 0});
  return static_cast<StreamId>(streams_.size() - 1);
}

namespace {

/// A remote variable lives in its remote buffer, not on the device: ops and streams read
/// it after a remote_load. `what` names the reader, e.g. "op 'add': input 0".
void refuse_remote_variable(const TensorInfo& t, const std::string& what) {
  if (t.kind != TensorKind::RemoteVariable) return;
  fail(ErrorCode::InvalidArgument, what + " is the remote variable '" + t.name + "', which lives in remote buffer " +
                                       std::to_string(t.remote_buffer) + ": remote_load it first");
}

}  // namespace

StreamId Graph::add_d2h_stream(const std::string& name, TensorId tensor_id) {
  require_main_graph("stream '" + name + "'");
  check_unique_name(name, "stream");
  refuse_remote_variable(tensor(tensor_id), "device-to-host stream '" + name + "': its tensor");
  streams_.push_back(Stream{name, StreamDirection::DeviceToHost, tensor_id, ops_.size()});
  return static_cast<StreamId>(streams_.size() - 1);
}

namespace {

/// The op type `type`, checked to take `inputs` inputs.
const OpSchema& find_schema(std::string_view type, size_t inputs) {
  const OpSchema* def = OpSchemaRegistry::instance().find(type);
  if (!def) fail(ErrorCode::UnknownOp, "unknown op '" + std::string(type) + "'");
  if (inputs < def->min_inputs || inputs > def->max_inputs) {
    const std::string expected = def->min_inputs == def->max_inputs
                                     ? std::to_string(def->min_inputs)
                                     : std::to_string(def->min_inputs) + " to " + std::to_string(def->max_inputs);
    fail(ErrorCode::InvalidArgument, "op '" + def->name + "' takes " + expected + " inputs, got " +
                                         std::to_string(inputs));
  }
  return *def;
}

/// The inputs' tensors (resolve_inputs checked that they exist), checked to be readable by
/// an op (a remote variable must be remote_load-ed first).
std::vector<const TensorInfo*> input_infos(const OpSchema& def, const std::vector<TensorId>& inputs,
                                           const std::vector<TensorInfo>& tensors) {
  std::vector<const TensorInfo*> infos;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& t = tensors[static_cast<size_t>(inputs[i])];
    refuse_remote_variable(t, "op '" + def.name + "': input " + std::to_string(i));
    infos.push_back(&t);
  }
  return infos;
}

/// Output k of `op` (op id `op_id`), from the shape inference's `out`: named after the op,
/// an alias of the input it updates in place or views.
TensorInfo output_tensor(const Op& op, OpId op_id, size_t k, size_t num_outputs, TensorType out,
                         const std::vector<TensorInfo>& tensors) {
  const OpSchema& def = *op.schema;
  TensorInfo t;
  t.name = op.name;
  if (num_outputs > 1) t.name.append(":").append(std::to_string(k));
  t.dtype = out.dtype;
  t.shape = std::move(out.shape);
  t.sharding = std::move(out.sharding);
  t.kind = TensorKind::OpOutput;
  t.producer = op_id;
  t.graph = op.graph;
  if (k < def.inplace_inputs.size() && def.inplace_inputs[k] >= 0) {
    t.alias_of = op.inputs[static_cast<size_t>(def.inplace_inputs[k])];
    t.sharding = tensors[static_cast<size_t>(t.alias_of)].sharding;  // an in-place update keeps the shard a shard
  }
  if (k == 0 && def.is_view) t.alias_of = op.inputs[0];
  return t;
}

}  // namespace

std::vector<TensorId> Graph::add_op(std::string_view type, std::vector<TensorId> inputs, Attributes attrs) {
  const OpSchema& def = find_schema(type, inputs.size());
  inputs = resolve_inputs(def, std::move(inputs));
  Op op;
  op.schema = &def;
  op.graph = current_graph();
  op.name = op.graph == kMainGraph ? def.name + "#" + std::to_string(ops_.size())
                                   : subgraph(op.graph).name + "/" + def.name + "#" +
                                         std::to_string(subgraph(op.graph).ops.size());
  attrs.validate(def.name, def.attrs);
  InferContext ctx{def.name, input_infos(def, inputs, tensors_), attrs, replication_factor_, this};
  if (def.resolve_attrs) def.resolve_attrs(ctx, attrs);
  InferResult result = def.infer(ctx);
  for (const TensorType& out : result.outputs) check_numel(out.shape, "op '" + def.name + "' output");
  for (size_t k = 0; k < result.outputs.size() && k < def.inplace_inputs.size(); ++k) {  // variadic ops list more
    const int input = def.inplace_inputs[k];
    if (input < 0) continue;
    const TensorInfo& target = tensors_[static_cast<size_t>(inputs[static_cast<size_t>(input)])];
    if (target.kind == TensorKind::Constant) {
      ctx.fail(ErrorCode::InvalidArgument, "an in-place op cannot modify the constant '" + target.name + "'");
    }
  }
  const bool main = op.graph == kMainGraph;
  op.phase = main ? phase_ : Phase::Forward;
  op.block = main ? block_for(inputs) : -1;
  op.inputs = std::move(inputs);
  op.attrs = std::move(attrs);
  const auto op_id = static_cast<OpId>(main ? ops_.size() : kSubgraphOpBase + sub_ops_.size());
  for (size_t k = 0; k < result.outputs.size(); ++k) {
    op.outputs.push_back(
        add_tensor(output_tensor(op, op_id, k, result.outputs.size(), std::move(result.outputs[k]), tensors_)));
  }
  std::vector<Op>& list = main ? ops_ : sub_ops_;
  list.push_back(std::move(op));
  if (!main) subgraph_mut(list.back().graph).ops.push_back(op_id);
  return list.back().outputs;
}

void Graph::infer_onto(const Op& op, const std::vector<TensorId>& outputs, const std::string& what) const {
  InferContext ctx{op.schema->name, input_infos(*op.schema, op.inputs, tensors_), op.attrs, replication_factor_, this};
  InferResult result = op.schema->infer(ctx);
  bool same = result.outputs.size() == outputs.size();
  for (size_t k = 0; same && k < outputs.size(); ++k) {
    const TensorInfo& t = tensors_[static_cast<size_t>(outputs[k])];
    same = result.outputs[k].dtype == t.dtype && result.outputs[k].shape == t.shape;
  }
  if (!same) fail(ErrorCode::Internal, what + " as '" + op.schema->name + "' changes its outputs");
}

void Graph::rewrite_op(OpId id, std::string_view type) {
  const Op& old = op(id);
  if (id >= kSubgraphOpBase) fail(ErrorCode::Internal, "rewrite of op '" + old.name + "' of a subgraph");
  Op rewritten = old;
  rewritten.schema = &find_schema(type, old.inputs.size());
  infer_onto(rewritten, old.outputs, "rewriting op '" + old.name + "'");
  Op& op = ops_[static_cast<size_t>(id)];
  op.schema = rewritten.schema;
  if (op.schema->is_view) tensors_[static_cast<size_t>(op.outputs[0])].alias_of = op.inputs[0];
}

void Graph::check_fusable(const std::vector<OpId>& ops, const std::vector<TensorId>& outputs) const {
  const auto member = [&ops](OpId o) { return std::binary_search(ops.begin(), ops.end(), o); };
  const bool ascending = !ops.empty() && std::is_sorted(ops.begin(), ops.end()) &&
                         std::adjacent_find(ops.begin(), ops.end()) == ops.end();
  if (!ascending || ops.front() < 0 || static_cast<size_t>(ops.back()) >= ops_.size()) {
    fail(ErrorCode::Internal, "fusing ops: the ops must be main-graph ops in ascending order");
  }
  for (const TensorId t : outputs) {
    if (!member(tensor(t).producer)) fail(ErrorCode::Internal, "fusing ops: '" + tensor(t).name + "' is not theirs");
  }
  for (const OpId o : ops) {
    for (const TensorId t : ops_[static_cast<size_t>(o)].outputs) {
      if (std::find(outputs.begin(), outputs.end(), t) != outputs.end()) continue;
      const std::vector<OpId> readers = consumers(t);
      if (!std::all_of(readers.begin(), readers.end(), member) || streamed(t)) {
        fail(ErrorCode::Internal, "fusing ops: '" + tensor(t).name + "' is read outside them");
      }
    }
  }
}

void Graph::fuse_ops(const std::vector<OpId>& ops, std::string_view type, std::vector<TensorId> inputs,
                     Attributes attrs, std::vector<TensorId> outputs) {
  check_fusable(ops, outputs);
  Op fused = ops_[static_cast<size_t>(ops.front())];
  fused.schema = &find_schema(type, inputs.size());
  attrs.validate(fused.schema->name, fused.schema->attrs);
  fused.name = fused.schema->name + "#" + std::to_string(ops.front());
  fused.inputs = resolve_inputs(*fused.schema, std::move(inputs));
  fused.attrs = std::move(attrs);
  infer_onto(fused, outputs, "fusing op '" + ops_[static_cast<size_t>(ops.front())].name + "'");
  fused.outputs = std::move(outputs);
  for (const OpId o : ops) {
    for (const TensorId t : ops_[static_cast<size_t>(o)].outputs) tensors_[static_cast<size_t>(t)].producer = -1;
  }
  for (const TensorId t : fused.outputs) tensors_[static_cast<size_t>(t)].producer = ops.front();
  ops_[static_cast<size_t>(ops.front())] = std::move(fused);
  remove_ops({ops.begin() + 1, ops.end()});
}

void Graph::remove_ops(const std::vector<OpId>& gone) {
  // The ops before position p that are gone: what an id or an op count at p shifts by.
  const auto shift = [&gone](size_t p) {
    return static_cast<size_t>(std::lower_bound(gone.begin(), gone.end(), static_cast<OpId>(p)) - gone.begin());
  };
  for (auto it = gone.rbegin(); it != gone.rend(); ++it) ops_.erase(ops_.begin() + *it);
  for (TensorInfo& t : tensors_) {
    if (t.producer >= 0 && t.producer < kSubgraphOpBase) t.producer -= static_cast<OpId>(shift(static_cast<size_t>(t.producer)));
  }
  for (Stream& s : streams_) s.after_ops -= shift(s.after_ops);
}

const TensorInfo& Graph::tensor(TensorId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tensors_.size()) {
    fail(ErrorCode::NotFound, "tensor " + std::to_string(id) + " does not exist (the IR has " +
                                  std::to_string(tensors_.size()) + " tensors)");
  }
  return tensors_[id];
}

const Op& Graph::op(OpId id) const {
  const bool sub = id >= kSubgraphOpBase;
  const std::vector<Op>& list = sub ? sub_ops_ : ops_;
  const OpId index = sub ? id - kSubgraphOpBase : id;
  if (index < 0 || static_cast<size_t>(index) >= list.size()) {
    fail(ErrorCode::NotFound, "op " + std::to_string(id) + " does not exist");
  }
  return list[static_cast<size_t>(index)];
}

const Stream& Graph::stream(StreamId id) const {
  if (id < 0 || static_cast<size_t>(id) >= streams_.size()) {
    fail(ErrorCode::NotFound, "stream " + std::to_string(id) + " does not exist (the IR has " +
                                  std::to_string(streams_.size()) + " streams)");
  }
  return streams_[id];
}

TensorId Graph::storage_root(TensorId id) const {
  while (tensor(id).alias_of != kNoTensor) id = tensors_[id].alias_of;
  return id;
}

bool Graph::streamed(TensorId id) const {
  return std::any_of(streams_.begin(), streams_.end(), [id](const Stream& s) { return s.tensor == id; });
}

std::vector<OpId> Graph::consumers(TensorId id) const {
  std::vector<OpId> out;
  for (size_t i = 0; i < ops_.size(); ++i) {
    for (TensorId in : ops_[i].inputs) {
      if (in == id) {
        out.push_back(static_cast<OpId>(i));
        break;
      }
    }
  }
  return out;
}

std::optional<TensorId> Graph::find_named(const std::string& name) const {
  for (const auto& s : streams_) {
    if (s.name == name) return s.tensor;
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorKind kind = tensors_[i].kind;
    if ((kind == TensorKind::Variable || kind == TensorKind::RemoteVariable) && tensors_[i].name == name) {
      return static_cast<TensorId>(i);
    }
  }
  return std::nullopt;
}

Graph::Mark Graph::mark() const {
  return {tensors_.size(), ops_.size(),      streams_.size(),    remote_buffers_.size(),
          sub_ops_.size(), subgraphs_.size(), call_sites_.size(), phase_};
}

void Graph::rollback(const Mark& m) {
  tensors_.resize(m.tensors);
  ops_.resize(m.ops);
  streams_.resize(m.streams);
  remote_buffers_.resize(m.remote_buffers);
  sub_ops_.resize(m.sub_ops);
  subgraphs_.resize(m.subgraphs);
  call_sites_.resize(m.call_sites);
  const auto gone_tensor = [&](TensorId t) { return static_cast<size_t>(t) >= m.tensors; };
  for (Subgraph& g : subgraphs_) {
    std::erase_if(g.inputs, gone_tensor);
    std::erase_if(g.outputs, gone_tensor);
    std::erase_if(g.ops, [&](OpId o) { return static_cast<size_t>(o - kSubgraphOpBase) >= m.sub_ops; });
  }
  std::erase_if(graph_stack_, [&](GraphId g) { return static_cast<size_t>(g) > m.subgraphs; });
  phase_ = m.phase;
  implicit_block_ = -1;
}


}  // namespace plexus::ir
