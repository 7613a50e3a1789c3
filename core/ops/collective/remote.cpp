// Remote buffer ops (seed 000 17.2; seed 001 listing 13.2; PopXL ops.remote_load /
// ops.remote_store). The buffer is the attribute `buffer`; the slot is the attribute
// `index` (default 0) or, when given, an int32 scalar input tensor read at run time.
//   remote_load(; buffer, index) / remote_load(index; buffer)     -> a copy of the slot
//   remote_store(t; buffer, index) / remote_store(t, index; buffer) -> no output
// A constant index out of range is an error when the op is added; a tensor index out of
// range is a run error naming the buffer. A load from a buffer holding replica-sharded
// variables yields a shard (it all-gathers to the full shape). Not differentiable.
#include <cstring>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;

std::vector<ir::AttrSpec> remote_attrs() {
  return {{"buffer", ir::AttrKind::Int, std::nullopt}, {"index", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
}

std::string describe(ir::RemoteBufferId id, const ir::RemoteBuffer& b) {
  return "remote buffer " + std::to_string(id) + " (" + std::to_string(b.entries) + " x " +
         std::string(ir::dtype_name(b.dtype)) + ir::shape_string(b.shape) + ")";
}

// The op's buffer, checked; and its constant index unless `index_input` names an input.
const ir::RemoteBuffer& checked_buffer(const ir::InferContext& ctx, size_t index_input) {
  const auto id = static_cast<ir::RemoteBufferId>(ctx.attrs.get_int("buffer"));
  if (id < 0 || static_cast<size_t>(id) >= ctx.graph->remote_buffers().size()) {
    ctx.fail(ErrorCode::NotFound, "remote buffer " + std::to_string(ctx.attrs.get_int("buffer")) + " does not exist");
  }
  const ir::RemoteBuffer& b = ctx.graph->remote_buffer(id);
  if (ctx.inputs.size() > index_input) {
    ctx.expect_dtype(index_input, DType::Int32);
    if (ir::numel(ctx.shape(index_input)) != 1) ctx.fail(ErrorCode::ShapeMismatch, "the index must be a single int32");
  } else {
    const int64_t index = ctx.attrs.get_int("index");
    if (index < 0 || index >= b.entries) {
      ctx.fail(ErrorCode::InvalidArgument, "index " + std::to_string(index) + " is outside [0, " +
                                               std::to_string(b.entries) + ") of " + describe(id, b));
    }
  }
  return b;
}

// Where the kernel finds its slot: a fixed one, or one chosen by an index tensor.
struct SlotFinder {
  std::byte* base;
  size_t slot_bytes;
  int64_t entries;
  int64_t fixed_index;
  const int32_t* index_tensor;  ///< null for a constant index
  std::string what;             ///< names the op and buffer in run errors

  std::byte* operator()() const {
    const int64_t index = index_tensor ? *index_tensor : fixed_index;
    if (index < 0 || index >= entries) {
      ir::fail(ErrorCode::Runtime, what + ": index " + std::to_string(index) + " is outside [0, " +
                                       std::to_string(entries) + ")");
    }
    return base + static_cast<size_t>(index) * slot_bytes;
  }
};

SlotFinder slot_finder(const KernelContext& ctx, size_t index_input) {
  const auto id = static_cast<ir::RemoteBufferId>(ctx.op.attrs.get_int("buffer"));
  const ir::RemoteBuffer& b = ctx.graph.remote_buffer(id);
  const int32_t* index = ctx.in.size() > index_input ? ctx.input<int32_t>(index_input) : nullptr;
  return SlotFinder{ctx.remote[static_cast<size_t>(id)], b.slot_bytes(), b.entries, ctx.op.attrs.get_int("index"),
                    index, "op '" + ctx.op.name + "' on " + describe(id, b)};
}

OpDef load_def() {
  OpDef d;
  d.name = "remote_load";
  d.min_inputs = 0;
  d.max_inputs = 1;
  d.attrs = remote_attrs();
  d.infer = [](const ir::InferContext& ctx) {
    const ir::RemoteBuffer& b = checked_buffer(ctx, 0);
    return ir::InferResult{{{b.dtype, b.shape, b.sharding}}};
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    return [slot = slot_finder(ctx, 0), out = ctx.out[0]] { std::memcpy(out, slot(), slot.slot_bytes); };
  };
  return d;
}

OpDef store_def() {
  OpDef d;
  d.name = "remote_store";
  d.min_inputs = 1;
  d.max_inputs = 2;
  d.attrs = remote_attrs();
  d.infer = [](const ir::InferContext& ctx) {
    const ir::RemoteBuffer& b = checked_buffer(ctx, 1);
    if (ctx.dtype(0) != b.dtype || ctx.shape(0) != b.shape) {
      ctx.fail(ErrorCode::ShapeMismatch, "the tensor must match the slots of remote buffer " +
                                             std::to_string(ctx.attrs.get_int("buffer")) + ", " +
                                             std::string(ir::dtype_name(b.dtype)) + ir::shape_string(b.shape));
    }
    return ir::InferResult{};
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    return [slot = slot_finder(ctx, 1), in = ctx.in[0]] { std::memcpy(slot(), in, slot.slot_bytes); };
  };
  return d;
}

const OpRegistration load_op{load_def()};
const OpRegistration store_op{store_def()};

}  // namespace

}  // namespace plexus::ops
