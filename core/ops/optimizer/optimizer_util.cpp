#include "core/ops/optimizer/optimizer_util.h"

#include <map>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/number_format.h"

namespace plexus::ops {

namespace {

// The tensor whose storage `t` uses (an in-place output or view aliases its input).
const ir::TensorInfo* storage_of(const ir::Graph& graph, const ir::TensorInfo* t) {
  while (t->alias_of != ir::kNoTensor) t = &graph.tensor(t->alias_of);
  return t;
}

}  // namespace

void expect_f32_input(const ir::InferContext& ctx, size_t i, const std::string& name) {
  if (ctx.dtype(i) != ir::DType::Float32) {
    ctx.fail(ir::ErrorCode::DTypeMismatch, "input " + std::to_string(i) + " (" + name + ") must be float32");
  }
}

void expect_one_element(const ir::InferContext& ctx, size_t i, const std::string& name, const std::string& what) {
  if (ir::numel(ctx.shape(i)) != 1 || ctx.rank(i) > 1) {
    ctx.fail(ir::ErrorCode::ShapeMismatch,
             name + " " + ir::shape_string(ctx.shape(i)) + " must be a float32 [] or [1] tensor (" + what + ")");
  }
}

void expect_f32_scalar(const ir::InferContext& ctx, size_t i, const std::string& name, const std::string& what) {
  expect_f32_input(ctx, i, name);
  expect_one_element(ctx, i, name, what);
}

void expect_non_negative(const ir::InferContext& ctx, std::initializer_list<const char*> attrs) {
  for (const char* name : attrs) {
    const double value = ctx.attrs.get_float(name);
    if (!(value >= 0.0)) {
      ctx.fail(ir::ErrorCode::InvalidArgument, std::string(name) + " is " + number(value) + ", must be >= 0");
    }
  }
}

void expect_distinct_storage(const ir::InferContext& ctx, const std::vector<size_t>& updated,
                             const std::vector<std::string>& names, const std::string& rule) {
  if (!ctx.graph) return;
  std::map<const ir::TensorInfo*, size_t> first;  // storage -> the first input using it
  for (size_t index : updated) {
    const auto [it, inserted] = first.emplace(storage_of(*ctx.graph, ctx.inputs[index]), index);
    if (!inserted) {
      ctx.fail(ir::ErrorCode::InvalidArgument, names[it->second] + " and " + names[index] + " share storage: " + rule);
    }
  }
}

void expect_shaped_as_weight(const ir::InferContext& ctx, size_t count, const std::vector<std::string>& names) {
  for (size_t i = 0; i < count; ++i) expect_f32_input(ctx, i, names[i]);
  for (size_t i = 1; i < count; ++i) {
    if (ctx.shape(i) != ctx.shape(0)) {
      ctx.fail(ir::ErrorCode::ShapeMismatch, names[i] + " " + ir::shape_string(ctx.shape(i)) + " must have " + names[0] +
                                                 "'s shape " + ir::shape_string(ctx.shape(0)));
    }
  }
}

void expect_step_and_optional_lr(const ir::InferContext& ctx, size_t step) {
  expect_f32_scalar(ctx, step, "step", "the update count");
  const size_t lr = step + 1;
  if (ctx.inputs.size() > lr) expect_f32_scalar(ctx, lr, "lr", "the learning rate, overriding attribute 'lr'");
}

ir::InferResult outputs_shaped_as(const ir::InferContext& ctx, const std::vector<size_t>& inputs) {
  ir::InferResult r;
  for (size_t i : inputs) r.outputs.push_back({ir::DType::Float32, ctx.shape(i)});
  return r;
}

LearningRate::LearningRate(const KernelContext& ctx, size_t index) : attribute_(ctx.op.attrs.get_float("lr")) {
  if (ctx.in.size() > index) tensor_ = ctx.input<float>(index);
}

}  // namespace plexus::ops
