// Collective ops between replicas (PopXL ops.collectives; seed 000 17.2, seed 001). Each
// takes an optional grouping through the attributes group_size (0 = R / stride, PopXL's
// default) and stride (1); the collective runs within each group of it.
//   replicated_all_reduce(x; op)     op over the group, same shape ("sum" "mean" "max" "min")
//   replicated_all_reduce_(x; op)    the same, in place
//   replicated_all_reduce_bucket(x0, ..., xk; op)
//                                    the all-reduces of several tensors of one dtype in one
//                                    call (a gradient bucket, core/compile/gradient_buckets.h,
//                                    PyTorch DDP's buckets): outputs y0..yk, element for
//                                    element the reduction each does alone, so the same bits
//   replicated_all_reduce_bucket_(x0, ..., xk; op)   the same, in place
//   replicated_all_gather(x; output_shape)
//                                    "auto": the full tensor for a replica-sharded x (its
//                                    original shape, padding removed), else "new_axis";
//                                    "new_axis": [g] + shape, member i's x at i;
//                                    "concat": members' x concatenated along axis 0
//   replicated_reduce_scatter(x; op) x flattened and zero-padded to g * ceil(numel / g),
//                                    reduced over the group; this replica keeps its shard
//                                    [ceil(numel / g)] ("sum" or "mean")
//   replica_sharded_slice(x)         this replica's shard of x flattened and zero-padded,
//                                    [ceil(numel / g)], no communication
//   replica_sharded_slice_grad(dy; shape)
//                                    zeros of `shape` with this replica's shard set to dy
// Shard m of a group is held by the member at position m (docs/design.md, "Semantics"). A collective
// on a replica-sharded tensor runs over the tensor's shard domain: with the default
// attributes it takes that grouping, and any other grouping is an InvalidGrouping error.
// reduce_scatter and replica_sharded_slice give shards of their input in that layout.
// Gradients follow the reference implementation (docs/design.md): autodiff never inserts a
// collective. all_reduce: dy (sum) or dy / g (mean); all_gather: this replica's slice of
// dy; reduce_scatter and replica_sharded_slice: dy put back at this replica's shard.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/grad_helpers.h"
#include "core/replication/communicator.h"
#include "core/replication/shard_layout.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;
using replication::ReduceOp;

std::vector<ir::AttrSpec> grouping_attrs() {
  return {{"group_size", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}},
          {"stride", ir::AttrKind::Int, ir::AttrValue{int64_t{1}}}};
}

std::vector<ir::AttrSpec> with(std::vector<ir::AttrSpec> specs, std::vector<ir::AttrSpec> more) {
  specs.insert(specs.end(), more.begin(), more.end());
  return specs;
}

ir::ReplicaGrouping grouping(const ir::Attributes& attrs, int64_t replication_factor) {
  const int64_t stride = attrs.get_int("stride");
  int64_t size = attrs.get_int("group_size");
  if (size == 0 && stride >= 1) size = replication_factor / stride;
  return ir::ReplicaGrouping(replication_factor, size, stride);
}

// The grouping of an op, checked at inference: an invalid one is an InvalidGrouping error
// naming the op.
ir::ReplicaGrouping checked_grouping(const ir::InferContext& ctx) {
  try {
    return grouping(ctx.attrs, ctx.replication_factor);
  } catch (const ir::Error& e) {
    ctx.fail(ErrorCode::InvalidGrouping, e.what());
  }
}

// A collective on a replica-sharded input runs over the shard domain (docs/design.md, "Semantics").
void resolve_shard_domain(const ir::InferContext& ctx, ir::Attributes& attrs) {
  const std::optional<ir::Sharding>& sharding = ctx.inputs[0]->sharding;
  if (!sharding) return;
  const int64_t size = attrs.get_int("group_size"), stride = attrs.get_int("stride");
  if (size == 0 && stride == 1) {
    attrs.set("group_size", sharding->shard_over);
    attrs.set("stride", sharding->stride);
    return;
  }
  const ir::ReplicaGrouping domain = sharding->domain(ctx.replication_factor);
  if (size != domain.group_size() || stride != domain.stride()) {
    ctx.fail(ErrorCode::InvalidGrouping, "input 0 is replica-sharded over " + domain.to_string() +
                                             "; a collective on it must use that grouping, not group_size " +
                                             std::to_string(size) + ", stride " + std::to_string(stride));
  }
}

ReduceOp reduce_op(const ir::Attributes& attrs) {
  ReduceOp op = ReduceOp::Sum;
  parse_reduce_op(attrs.get_string("op"), op);
  return op;
}

void check_reduce_op(const ir::InferContext& ctx, bool sum_or_mean_only) {
  ReduceOp op;
  const std::string& name = ctx.attrs.get_string("op");
  if (!parse_reduce_op(name, op) || (sum_or_mean_only && op != ReduceOp::Sum && op != ReduceOp::Mean)) {
    ctx.fail(ErrorCode::InvalidArgument, "op '" + name + "' is not one of " +
                                             (sum_or_mean_only ? "sum, mean" : "sum, mean, max, min"));
  }
}

using replication::shard_chunk;

// What a kernel needs to know about its replica's group.
struct GroupView {
  std::vector<int64_t> members;
  int64_t position;
};

GroupView group_view(const KernelContext& ctx) {
  const ir::ReplicaGrouping g = grouping(ctx.op.attrs, ctx.replication_factor);
  return {g.members(g.group_of(ctx.replica)), g.position_in_group(ctx.replica)};
}

// The communicator a kernel calls; groups of one never need it.
replication::Communicator* comm_for(const KernelContext& ctx, const GroupView& view) {
  if (view.members.size() > 1 && ctx.comm == nullptr) {
    ir::fail(ErrorCode::Internal, ctx.op.name + ": a group of " + std::to_string(view.members.size()) +
                                      " replicas but the session has no collectives");
  }
  return view.members.size() > 1 ? ctx.comm : nullptr;
}

// t / g, for the gradients of mean reductions over the op's groups.
TensorId divided_by_group(ir::GradContext& ctx, TensorId t) {
  const ir::ReplicaGrouping g = grouping(ctx.op.attrs, ctx.graph.replication_factor());
  return ctx.add("mul", {t, scalar_constant(ctx.graph, 1.0f / static_cast<float>(g.group_size()))});
}

// The collectives plugins move and reduce float32 and int32 elements only.
void expect_collective_dtype(const ir::InferContext& ctx, size_t i) {
  if (ctx.dtype(i) != DType::Float32 && ctx.dtype(i) != DType::Int32) {
    ctx.fail(ErrorCode::DTypeMismatch, "input " + std::to_string(i) + " must be float32 or int32 (the dtypes "
                                       "collectives plugins carry)");
  }
}

// --- all_reduce ------------------------------------------------------------------------

ir::InferResult infer_all_reduce(const ir::InferContext& ctx) {
  expect_collective_dtype(ctx, 0);
  checked_grouping(ctx);
  check_reduce_op(ctx, false);
  return {{{ctx.dtype(0), ctx.shape(0)}}};
}

Kernel all_reduce_kernel(const KernelContext& ctx) {
  GroupView view = group_view(ctx);
  replication::Communicator* comm = comm_for(ctx, view);
  const auto count = static_cast<size_t>(ir::numel(ctx.inputs[0]->shape));
  const DType dtype = ctx.inputs[0]->dtype;
  const size_t bytes = count * ir::dtype_size(dtype);
  return [comm, members = std::move(view.members), x = ctx.in[0], y = ctx.out[0], count, bytes, dtype,
          op = reduce_op(ctx.op.attrs)] {
    if (comm != nullptr) {
      comm->all_reduce(members, x, y, count, dtype, op);
    } else if (x != y) {
      std::memcpy(y, x, bytes);  // a group of one: every reduction is the identity
    }
  };
}

// A bucket laid out as a view (KernelDef::span_inputs; no scratch): its inputs lie one
// after the other from in[0], its outputs likewise from out[0] (small alignment gaps
// between them, reduced along and never read), so one call reduces the span where it is.
Kernel all_reduce_span_kernel(const KernelContext& ctx, GroupView view, replication::Communicator* comm) {
  const std::byte *x = ctx.in[0], *end = ctx.in.back() + ctx.inputs.back()->bytes();
  for (size_t i = 0; i < ctx.in.size(); ++i) {
    const bool ordered = i == 0 || ctx.in[i] >= ctx.in[i - 1] + ctx.inputs[i - 1]->bytes();
    if (!ordered || ctx.out[i] - ctx.out[0] != ctx.in[i] - x) {
      ir::fail(ErrorCode::Internal, ctx.op.name + ": a gradient bucket view whose members are not laid out in order");
    }
  }
  const DType dtype = ctx.inputs[0]->dtype;
  const auto bytes = static_cast<size_t>(end - x);
  return [comm, members = std::move(view.members), x, y = ctx.out[0], bytes, count = bytes / ir::dtype_size(dtype),
          dtype, op = reduce_op(ctx.op.attrs)] {
    if (comm != nullptr) {
      comm->all_reduce(members, x, y, count, dtype, op);
    } else if (x != y) {  // a group of one: every reduction is the identity
      std::memcpy(y, x, bytes);
    }
  };
}

// The kernel of a bucket: packs every input into the scratch, all-reduces it in one call
// and unpacks the results. A group of one copies inputs to outputs. Without scratch the
// memory plan laid the inputs out as one span (KernelDef::span_inputs; all_reduce_span_kernel).
Kernel all_reduce_bucket_kernel(const KernelContext& ctx) {
  GroupView view = group_view(ctx);
  replication::Communicator* comm = comm_for(ctx, view);
  if (ctx.scratch == nullptr) return all_reduce_span_kernel(ctx, std::move(view), comm);
  struct Member {
    const std::byte* x;
    std::byte* y;
    size_t offset, bytes;
  };
  std::vector<Member> parts;
  size_t total = 0;
  for (size_t i = 0; i < ctx.in.size(); ++i) {
    parts.push_back({ctx.in[i], ctx.out[i], total, ctx.inputs[i]->bytes()});
    total += parts.back().bytes;
  }
  const DType dtype = ctx.inputs[0]->dtype;
  return [comm, members = std::move(view.members), parts = std::move(parts), packed = ctx.scratch,
          count = total / ir::dtype_size(dtype), dtype, op = reduce_op(ctx.op.attrs)] {
    if (comm == nullptr) {  // a group of one: every reduction is the identity
      for (const Member& m : parts) {
        if (m.x != m.y) std::memcpy(m.y, m.x, m.bytes);
      }
      return;
    }
    for (const Member& m : parts) std::memcpy(packed + m.offset, m.x, m.bytes);
    comm->all_reduce(members, packed, packed, count, dtype, op);
    for (const Member& m : parts) std::memcpy(m.y, packed + m.offset, m.bytes);
  };
}

std::vector<TensorId> all_reduce_grad(ir::GradContext& ctx) {
  const ReduceOp op = reduce_op(ctx.op.attrs);
  if (op == ReduceOp::Max || op == ReduceOp::Min) {
    ir::fail(ErrorCode::InvalidArgument, "autodiff: " + ctx.op.name + " reduces with " +
                                             ctx.op.attrs.get_string("op") + ", which has no gradient");
  }
  const TensorId dy = ctx.output_grads[0];
  return {op == ReduceOp::Sum ? dy : divided_by_group(ctx, dy)};
}

OpDef all_reduce_def(const char* name, bool in_place) {
  OpDef d;
  d.name = name;
  d.attrs = with(grouping_attrs(), {{"op", ir::AttrKind::String, ir::AttrValue{std::string("sum")}}});
  d.infer = infer_all_reduce;
  d.kernel = all_reduce_kernel;
  d.communicates = true;
  if (in_place) {
    d.inplace_inputs = {0};
  } else {
    d.grad = all_reduce_grad;
  }
  return d;
}

/// The most tensors one bucket op reduces.
constexpr size_t kMaxBucketInputs = 4096;

/// Every input numeric, of input 0's dtype and not replica-sharded.
ir::InferResult infer_all_reduce_bucket(const ir::InferContext& ctx) {
  checked_grouping(ctx);
  check_reduce_op(ctx, false);
  ir::InferResult r;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    expect_collective_dtype(ctx, i);
    const std::string input = "input " + std::to_string(i);
    if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail(ErrorCode::DTypeMismatch, input + ": a bucket's inputs share a dtype");
    if (ctx.inputs[i]->sharding) ctx.fail(ErrorCode::InvalidArgument, input + " is replica-sharded");
    r.outputs.push_back({ctx.dtype(i), ctx.shape(i)});
  }
  return r;
}

/// A bucket's scratch: every input packed one after the other.
size_t bucket_scratch(const ir::InferContext& ctx) {
  size_t bytes = 0;
  for (const ir::TensorInfo* input : ctx.inputs) bytes += input->bytes();
  return bytes;
}

OpDef all_reduce_bucket_def(const char* name, bool in_place) {
  OpDef d = all_reduce_def(name, in_place);
  d.max_inputs = kMaxBucketInputs;
  d.infer = infer_all_reduce_bucket;
  d.kernel = all_reduce_bucket_kernel;
  d.scratch = bucket_scratch;
  d.grad = nullptr;  // made after autodiff
  d.span_inputs = true;
  d.inplace_inputs.clear();
  for (size_t i = 0; in_place && i < kMaxBucketInputs; ++i) d.inplace_inputs.push_back(static_cast<int>(i));
  return d;
}

// --- all_gather --------------------------------------------------------------------------

ir::InferResult infer_all_gather(const ir::InferContext& ctx) {
  expect_collective_dtype(ctx, 0);
  const int64_t g = checked_grouping(ctx).group_size();
  const std::string& mode = ctx.attrs.get_string("output_shape");
  const std::optional<ir::Sharding>& sharding = ctx.inputs[0]->sharding;
  if (mode == "auto" && sharding) return {{{ctx.dtype(0), sharding->full_shape}}};  // the full tensor
  ir::Shape out = ctx.shape(0);
  if (mode == "auto" || mode == "new_axis") {
    out.insert(out.begin(), g);
  } else if (mode == "concat") {
    if (out.empty()) ctx.fail(ErrorCode::ShapeMismatch, "output_shape 'concat' needs an input of rank >= 1");
    out[0] *= g;
  } else {
    ctx.fail(ErrorCode::InvalidArgument, "output_shape '" + mode + "' is not one of auto, new_axis, concat");
  }
  if (out.size() > ir::kMaxRank) ctx.fail(ErrorCode::ShapeMismatch, "the output would exceed the maximum rank");
  return {{{ctx.dtype(0), out}}};
}

Kernel all_gather_kernel(const KernelContext& ctx) {
  GroupView view = group_view(ctx);
  replication::Communicator* comm = comm_for(ctx, view);
  const auto count = static_cast<size_t>(ir::numel(ctx.inputs[0]->shape));
  const DType dtype = ctx.inputs[0]->dtype;
  const size_t esize = ir::dtype_size(dtype);
  const size_t out_bytes = static_cast<size_t>(ir::numel(ctx.outputs[0]->shape)) * esize;
  // Padded shards gather into scratch; the output keeps the first out_bytes (no padding).
  std::byte* gathered = out_bytes < count * view.members.size() * esize ? ctx.scratch : ctx.out[0];
  return [comm, members = std::move(view.members), x = ctx.in[0], y = ctx.out[0], gathered, count, dtype, esize,
          out_bytes] {
    if (comm != nullptr) {
      comm->all_gather(members, x, gathered, count, dtype);
    } else {
      std::memcpy(gathered, x, count * esize);
    }
    if (gathered != y) std::memcpy(y, gathered, out_bytes);
  };
}

// The gradient of all-gather is this replica's slice of dy (no sum), reshaped to x.
std::vector<TensorId> all_gather_grad(ir::GradContext& ctx) {
  ir::Attributes flat;
  flat.set("shape", std::vector<int64_t>{-1});
  ir::Attributes slice;
  slice.set("group_size", ctx.op.attrs.get_int("group_size"));
  slice.set("stride", ctx.op.attrs.get_int("stride"));
  const TensorId mine = ctx.add("replica_sharded_slice", {ctx.add("reshape", {ctx.output_grads[0]}, flat)}, slice);
  const ir::Shape x_shape = ctx.shape(ctx.op.inputs[0]);
  ir::Attributes back;
  back.set("shape", std::vector<int64_t>(x_shape.begin(), x_shape.end()));
  return {ctx.add("reshape", {mine}, back)};
}

/// The padded gather of a replica-sharded tensor's shards goes through scratch.
size_t all_gather_scratch(const ir::InferContext& ctx) {
  const std::optional<ir::Sharding>& sharding = ctx.inputs[0]->sharding;
  if (ctx.attrs.get_string("output_shape") != "auto" || !sharding) return 0;
  const int64_t gathered = checked_grouping(ctx).group_size() * sharding->shard_elements();
  return gathered == ir::numel(sharding->full_shape) ? 0 : static_cast<size_t>(gathered) * ir::dtype_size(ctx.dtype(0));
}

OpDef all_gather_def() {
  OpDef d;
  d.name = "replicated_all_gather";
  d.attrs = with(grouping_attrs(), {{"output_shape", ir::AttrKind::String, ir::AttrValue{std::string("auto")}}});
  d.infer = infer_all_gather;
  d.resolve_attrs = resolve_shard_domain;
  d.kernel = all_gather_kernel;
  d.scratch = all_gather_scratch;
  d.communicates = true;
  d.grad = all_gather_grad;
  return d;
}

// --- reduce_scatter and sharded slices ---------------------------------------------------

// Output: this replica's shard of x, a replica-sharded tensor over the op's grouping.
ir::InferResult infer_sharded(const ir::InferContext& ctx) {
  expect_collective_dtype(ctx, 0);
  const ir::ReplicaGrouping grouping = checked_grouping(ctx);
  const int64_t g = grouping.group_size();
  const int64_t chunk = shard_chunk(ir::numel(ctx.shape(0)), g);
  return {{{ctx.dtype(0), {chunk}, ir::Sharding{ctx.shape(0), g, grouping.stride()}}}};
}

// A padded send buffer for reduce-scatter when the shards do not tile x exactly.
size_t reduce_scatter_scratch(const ir::InferContext& ctx) {
  const int64_t g = checked_grouping(ctx).group_size();
  const int64_t numel = ir::numel(ctx.shape(0));
  const int64_t chunk = shard_chunk(numel, g);
  return chunk * g == numel ? 0 : static_cast<size_t>(chunk * g) * ir::dtype_size(ctx.dtype(0));
}

Kernel reduce_scatter_kernel(const KernelContext& ctx) {
  GroupView view = group_view(ctx);
  replication::Communicator* comm = comm_for(ctx, view);
  const DType dtype = ctx.inputs[0]->dtype;
  const size_t esize = ir::dtype_size(dtype);
  const auto numel = static_cast<size_t>(ir::numel(ctx.inputs[0]->shape));
  const auto chunk = static_cast<size_t>(ctx.outputs[0]->shape[0]);
  const size_t padded = chunk * view.members.size();
  std::byte* send = padded == numel ? ctx.in[0] : ctx.scratch;
  return [comm, members = std::move(view.members), x = ctx.in[0], y = ctx.out[0], send, numel, chunk, padded, esize,
          dtype, op = reduce_op(ctx.op.attrs)] {
    if (send != x) {
      std::memcpy(send, x, numel * esize);
      std::memset(send + numel * esize, 0, (padded - numel) * esize);
    }
    if (comm != nullptr) {
      comm->reduce_scatter(members, send, y, chunk, dtype, op);
    } else {
      std::memcpy(y, send, chunk * esize);
    }
  };
}

// dy, one shard, put back at this replica's shard of zeros shaped like the op's input.
TensorId unshard(ir::GradContext& ctx, TensorId dy) {
  const ir::Shape x_shape = ctx.shape(ctx.op.inputs[0]);
  ir::Attributes attrs;
  attrs.set("group_size", ctx.op.attrs.get_int("group_size"));
  attrs.set("stride", ctx.op.attrs.get_int("stride"));
  attrs.set("shape", std::vector<int64_t>(x_shape.begin(), x_shape.end()));
  return ctx.add("replica_sharded_slice_grad", {dy}, attrs);
}

std::vector<TensorId> reduce_scatter_grad(ir::GradContext& ctx) {
  const TensorId dx = unshard(ctx, ctx.output_grads[0]);
  return {reduce_op(ctx.op.attrs) == ReduceOp::Mean ? divided_by_group(ctx, dx) : dx};
}

OpDef reduce_scatter_def() {
  OpDef d;
  d.name = "replicated_reduce_scatter";
  d.attrs = with(grouping_attrs(), {{"op", ir::AttrKind::String, ir::AttrValue{std::string("sum")}}});
  d.infer = [](const ir::InferContext& ctx) {
    check_reduce_op(ctx, true);
    return infer_sharded(ctx);
  };
  d.resolve_attrs = resolve_shard_domain;
  d.kernel = reduce_scatter_kernel;
  d.scratch = reduce_scatter_scratch;
  d.communicates = true;
  d.grad = reduce_scatter_grad;
  return d;
}

Kernel slice_kernel(const KernelContext& ctx) {
  const int64_t g = grouping(ctx.op.attrs, ctx.replication_factor).group_size();
  return [x = ctx.in[0], y = ctx.out[0], numel = ir::numel(ctx.inputs[0]->shape), g,
          position = group_view(ctx).position, esize = ir::dtype_size(ctx.inputs[0]->dtype)] {
    replication::extract_shard(x, y, numel, g, position, esize);
  };
}

std::vector<TensorId> slice_grad(ir::GradContext& ctx) { return {unshard(ctx, ctx.output_grads[0])}; }

OpDef slice_def() {
  OpDef d;
  d.name = "replica_sharded_slice";
  d.attrs = grouping_attrs();
  d.infer = infer_sharded;
  d.resolve_attrs = resolve_shard_domain;
  d.kernel = slice_kernel;
  d.grad = slice_grad;
  return d;
}

OpDef slice_grad_def() {
  OpDef d;
  d.name = "replica_sharded_slice_grad";
  d.attrs = with(grouping_attrs(), {{"shape", ir::AttrKind::Ints, std::nullopt}});
  d.infer = [](const ir::InferContext& ctx) {
    expect_collective_dtype(ctx, 0);
    const int64_t g = checked_grouping(ctx).group_size();
    const ir::Shape full = ctx.attrs.get_ints("shape");
    ir::check_shape(full, "op '" + ctx.op_name + "' attribute shape");
    if (ctx.rank(0) != 1 || ctx.shape(0)[0] != shard_chunk(ir::numel(full), g)) {
      ctx.fail(ErrorCode::ShapeMismatch, "dy must be one shard, [" + std::to_string(shard_chunk(ir::numel(full), g)) +
                                             "], of a tensor of shape " + ir::shape_string(full));
    }
    return ir::InferResult{{{ctx.dtype(0), full}}};
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    const int64_t g = grouping(ctx.op.attrs, ctx.replication_factor).group_size();
    const size_t esize = ir::dtype_size(ctx.inputs[0]->dtype);
    return [dy = ctx.in[0], dx = ctx.out[0], numel = ir::numel(ctx.outputs[0]->shape), g,
            position = group_view(ctx).position, esize] {
      std::memset(dx, 0, static_cast<size_t>(numel) * esize);
      replication::insert_shard(dy, dx, numel, g, position, esize);
    };
  };
  return d;
}

const OpRegistration all_reduce_op{all_reduce_def("replicated_all_reduce", false)};
const OpRegistration all_reduce_inplace_op{all_reduce_def("replicated_all_reduce_", true)};
const OpRegistration all_reduce_bucket_op{all_reduce_bucket_def("replicated_all_reduce_bucket", false)};
const OpRegistration all_reduce_bucket_inplace_op{all_reduce_bucket_def("replicated_all_reduce_bucket_", true)};
const OpRegistration all_gather_op{all_gather_def()};
const OpRegistration reduce_scatter_op{reduce_scatter_def()};
const OpRegistration slice_op{slice_def()};
const OpRegistration slice_grad_op{slice_grad_def()};

}  // namespace

}  // namespace plexus::ops
