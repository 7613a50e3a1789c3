#include "core/ops/common/float32_compute.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/float16.h"

namespace plexus::ops {

namespace {

using ir::DType;

/// One float16 tensor and its float32 copy.
struct Widened {
  std::byte* half = nullptr;
  std::vector<float> wide;
};

/// The copies of one kernel; `infos` are the float32 types the inner kernel sees.
struct Copies {
  std::vector<ir::TensorInfo> infos;
  std::vector<Widened> inputs, outputs;
};

bool is_half(const ir::TensorInfo* t) { return t->dtype == DType::Float16; }

// Points every float16 tensor of `types` / `buffers` at a new float32 copy in `copies`.
void widen(std::vector<const ir::TensorInfo*>& types, std::vector<std::byte*>& buffers, std::vector<ir::TensorInfo>& infos,
           std::vector<Widened>& copies) {
  for (size_t i = 0; i < types.size(); ++i) {
    if (!is_half(types[i])) continue;
    ir::TensorInfo& wide = infos.emplace_back();
    wide.name = types[i]->name;
    wide.dtype = DType::Float32;
    wide.shape = types[i]->shape;
    wide.sharding = types[i]->sharding;
    copies.push_back({buffers[i], std::vector<float>(static_cast<size_t>(ir::numel(wide.shape)))});
    types[i] = &wide;
    buffers[i] = reinterpret_cast<std::byte*>(copies.back().wide.data());
  }
}

}  // namespace

bool has_float16(const KernelContext& ctx) {
  return std::any_of(ctx.inputs.begin(), ctx.inputs.end(), is_half) ||
         std::any_of(ctx.outputs.begin(), ctx.outputs.end(), is_half);
}

Kernel compute_in_float32(const KernelContext& ctx, const Float32KernelBuilder& build) {
  if (!has_float16(ctx)) return build(ctx);
  auto copies = std::make_shared<Copies>();
  copies->infos.reserve(ctx.inputs.size() + ctx.outputs.size());  // stable addresses for the types
  copies->inputs.reserve(ctx.inputs.size());
  copies->outputs.reserve(ctx.outputs.size());
  KernelContext wide = ctx;
  widen(wide.inputs, wide.in, copies->infos, copies->inputs);
  widen(wide.outputs, wide.out, copies->infos, copies->outputs);
  Kernel inner = build(wide);
  return [copies, inner = std::move(inner)] {
    for (Widened& c : copies->inputs) {
      const auto* half = reinterpret_cast<const ir::Float16*>(c.half);
      for (size_t i = 0; i < c.wide.size(); ++i) c.wide[i] = ir::half_to_float(half[i]);
    }
    inner();
    for (Widened& c : copies->outputs) {
      auto* half = reinterpret_cast<ir::Float16*>(c.half);
      for (size_t i = 0; i < c.wide.size(); ++i) half[i] = ir::float_to_half(c.wide[i]);
    }
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
