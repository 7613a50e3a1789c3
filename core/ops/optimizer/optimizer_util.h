// Checks and run-time helpers shared by the weight-update ops (optimizers.cpp,
// lr_schedule.cpp, grad_clip.cpp): one-element float32 tensors (a step count, a learning
// rate), in-place targets that must not share storage, and a learning rate read from a
// tensor at run time.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/ops/op_def.h"

namespace plexus::ops {

/// Fails with DTypeMismatch "input i (name) must be float32" unless input i is float32.
void expect_f32_input(const ir::InferContext& ctx, size_t i, const std::string& name);

/// Fails with ShapeMismatch "name [s] must be a float32 [] or [1] tensor (what)" unless
/// input i has one element and rank <= 1.
void expect_one_element(const ir::InferContext& ctx, size_t i, const std::string& name, const std::string& what);

/// Both checks above: input i is a float32 [] or [1] tensor.
void expect_f32_scalar(const ir::InferContext& ctx, size_t i, const std::string& name, const std::string& what);

/// Fails with InvalidArgument "name is X, must be >= 0" unless each float attribute named
/// is >= 0 (NaN fails).
void expect_non_negative(const ir::InferContext& ctx, std::initializer_list<const char*> attrs);

/// Fails with InvalidArgument "a and b share storage: <rule>" when two of the inputs
/// `updated` (indices into ctx.inputs, named by `names[index]`) share storage.
void expect_distinct_storage(const ir::InferContext& ctx, const std::vector<size_t>& updated,
                             const std::vector<std::string>& names, const std::string& rule);

/// An optimizer's per-element inputs [0, count): float32 ("input i (names[i]) must be
/// float32"), each of [1, count) of input 0's shape ("grad [3,2] must have w's shape [2,3]").
void expect_shaped_as_weight(const ir::InferContext& ctx, size_t count, const std::vector<std::string>& names);

/// An optimizer's update count and optional learning rate: input `step` a float32 [] or
/// [1] tensor, and input step + 1, when the op has it, too (overriding attribute 'lr').
void expect_step_and_optional_lr(const ir::InferContext& ctx, size_t step);

/// Float32 outputs of the shapes of `inputs` (the tensors an op updates in place).
ir::InferResult outputs_shaped_as(const ir::InferContext& ctx, const std::vector<size_t>& inputs);

/// The learning rate an optimizer kernel uses: the tensor's value read at run time when
/// the op has the input, else the `lr` attribute.
class LearningRate {
 public:
  LearningRate(const KernelContext& ctx, size_t index);
  double value() const { return tensor_ ? static_cast<double>(*tensor_) : attribute_; }

 private:
  const float* tensor_ = nullptr;
  double attribute_;
};

}  // namespace plexus::ops
