#include "core/ops/common/float32_compute.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "core/ir/float16.h"

namespace plexus::ops {

namespace {

using ir::DType;

constexpr size_t kAlign = 64;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// Bytes of the float32 copy of a tensor of type (dtype, shape): none unless float16.
size_t copy_bytes(DType dtype, const ir::Shape& shape) {
  return dtype == DType::Float16 ? aligned(static_cast<size_t>(ir::numel(shape)) * sizeof(float)) : 0;
}

/// One float16 tensor and its float32 copy (in the op's scratch).
struct Widened {
  std::byte* half = nullptr;
  float* wide = nullptr;
  size_t count = 0;
};

/// The copies of one kernel; `infos` are the float32 types the inner kernel sees.
struct Copies {
  std::vector<ir::TensorInfo> infos;
  std::vector<Widened> inputs, outputs;
};

bool is_half(const ir::TensorInfo* t) { return t->dtype == DType::Float16; }

// Points every float16 tensor of `types` / `buffers` at a float32 copy at `next`, which
// moves past it.
void widen(std::vector<const ir::TensorInfo*>& types, std::vector<std::byte*>& buffers, std::vector<ir::TensorInfo>& infos,
           std::vector<Widened>& copies, std::byte*& next) {
  for (size_t i = 0; i < types.size(); ++i) {
    if (!is_half(types[i])) continue;
    const size_t bytes = copy_bytes(types[i]->dtype, types[i]->shape);
    ir::TensorInfo& wide = infos.emplace_back(*types[i]);
    wide.dtype = DType::Float32;
    copies.push_back({buffers[i], reinterpret_cast<float*>(next), static_cast<size_t>(ir::numel(wide.shape))});
    types[i] = &wide;
    buffers[i] = next;
    next += bytes;
  }
}

}  // namespace

bool has_float16(const KernelContext& ctx) {
  return std::any_of(ctx.inputs.begin(), ctx.inputs.end(), is_half) ||
         std::any_of(ctx.outputs.begin(), ctx.outputs.end(), is_half);
}

Kernel compute_in_float32(const KernelContext& ctx, const Float32KernelBuilder& build) {
  if (!has_float16(ctx)) return build(ctx);
  if (ctx.scratch == nullptr) {
    ir::fail(ir::ErrorCode::Internal, "op '" + ctx.op.name + "' computes float16 in float32 but has no scratch for the "
                                      "float32 copies (its scratch rule must be with_float32_copies')");
  }
  auto copies = std::make_shared<Copies>();
  copies->infos.reserve(ctx.inputs.size() + ctx.outputs.size());  // stable addresses for the types
  KernelContext wide = ctx;
  std::byte* next = ctx.scratch;
  widen(wide.inputs, wide.in, copies->infos, copies->inputs, next);
  widen(wide.outputs, wide.out, copies->infos, copies->outputs, next);
  wide.scratch = next;
  Kernel inner = build(wide);
  return [copies, inner = std::move(inner)] {
    for (const Widened& c : copies->inputs) {
      const auto* half = reinterpret_cast<const ir::Float16*>(c.half);
      for (size_t i = 0; i < c.count; ++i) c.wide[i] = ir::half_to_float(half[i]);
    }
    inner();
    for (const Widened& c : copies->outputs) {
      auto* half = reinterpret_cast<ir::Float16*>(c.half);
      for (size_t i = 0; i < c.count; ++i) half[i] = ir::float_to_half(c.wide[i]);
    }
  };
}

ScratchRule with_float32_copies(ScratchRule scratch) {
  return [scratch = std::move(scratch)](const ir::InferContext& ctx) {
    size_t bytes = 0;
    for (const ir::TensorInfo* t : ctx.inputs) bytes += copy_bytes(t->dtype, t->shape);
    const ir::OpSchema* schema = ir::OpSchemaRegistry::instance().find(ctx.op_name);
    for (const ir::TensorType& out : schema->infer(ctx).outputs) bytes += copy_bytes(out.dtype, out.shape);
    return bytes + (scratch ? scratch(ctx) : 0);
  };
}

ir::DType expect_float_inputs(const ir::InferContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    ctx.expect_float(i);
    if (ctx.dtype(i) != ctx.dtype(0)) {
      ctx.fail(ir::ErrorCode::DTypeMismatch, "input " + std::to_string(i) + " must have input 0's dtype (" +
                                                 std::string(ir::dtype_name(ctx.dtype(0))) + ")");
    }
  }
  return ctx.dtype(0);
}

}  // namespace plexus::ops
