// Learning-rate schedule, evaluated on the device from a step tensor so that the rate
// changes every step without recompiling (feed it to adamw_'s or sgd_momentum_'s lr input).
//   lr_schedule(step; base_lr=6e-4, warmup_steps, total_steps, min_lr=6e-5) -> float32 []
//     Linear warm-up then cosine decay, build-nanogpt's get_lr (train_gpt2.py), for
//     s = the value of step:
//       s < warmup_steps:                base_lr * (s + 1) / warmup_steps
//       warmup_steps <= s <= total_steps: min_lr + coeff * (base_lr - min_lr),
//           coeff = 0.5 * (1 + cos(pi * (s - warmup_steps) / (total_steps - warmup_steps)))
//       s > total_steps:                 min_lr
//     (nanoGPT's train.py divides the warm-up by warmup_iters + 1 instead.) step is the
//     optimizer's float32 [] or [1] update count, read before the optimizer increments it:
//     add lr_schedule before the optimizer op, so the first update uses s = 0 (nanoGPT's
//     iter_num 0) and the rate is base_lr / warmup_steps. Computed in double, returned as
//     float32. A negative or NaN step is a run error.
#include <cmath>
#include <numbers>
#include <string>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/number_format.h"
#include "core/ops/optimizer/optimizer_util.h"

namespace plexus::ops {

namespace {

struct Schedule {
  double base_lr, min_lr, warmup, total;
};

double scheduled_lr(double step, const Schedule& s) {
  if (step < s.warmup) return s.base_lr * (step + 1.0) / s.warmup;
  if (step > s.total) return s.min_lr;
  const double ratio = (step - s.warmup) / (s.total - s.warmup);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return s.min_lr + coeff * (s.base_lr - s.min_lr);
}

void check_schedule_attrs(const ir::InferContext& ctx) {
  const int64_t warmup = ctx.attrs.get_int("warmup_steps"), total = ctx.attrs.get_int("total_steps");
  if (warmup < 0) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "warmup_steps is " + std::to_string(warmup) + ", must be >= 0");
  }
  if (total <= warmup) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "total_steps is " + std::to_string(total) +
                                                 ", must be greater than warmup_steps (" + std::to_string(warmup) + ")");
  }
  const double base_lr = ctx.attrs.get_float("base_lr"), min_lr = ctx.attrs.get_float("min_lr");
  if (!(base_lr >= 0.0 && std::isfinite(base_lr))) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "base_lr is " + number(base_lr) + ", must be finite and >= 0");
  }
  if (!(min_lr >= 0.0 && min_lr <= base_lr)) {
    ctx.fail(ir::ErrorCode::InvalidArgument,
             "min_lr is " + number(min_lr) + ", must be in [0, base_lr] = [0, " + number(base_lr) + "]");
  }
}

ir::InferResult lr_schedule_infer(const ir::InferContext& ctx) {
  expect_f32_scalar(ctx, 0, "step", "the update count before this step's update");
  check_schedule_attrs(ctx);
  return ir::InferResult{{{ir::DType::Float32, {}}}};
}

[[noreturn, gnu::cold]] void bad_step(const std::string& op, float step) {
  ir::fail(ir::ErrorCode::Runtime,
           "op '" + op + "': step is " + number(step) + ", must be >= 0 (the number of updates so far)");
}

Kernel lr_schedule_kernel(const KernelContext& ctx) {
  const ir::Attributes& a = ctx.op.attrs;
  const Schedule s{a.get_float("base_lr"), a.get_float("min_lr"), static_cast<double>(a.get_int("warmup_steps")),
                   static_cast<double>(a.get_int("total_steps"))};
  return [step = ctx.input<float>(0), lr = ctx.output<float>(0), s, op = ctx.op.name] {
    if (!(*step >= 0.0f)) bad_step(op, *step);
    *lr = static_cast<float>(scheduled_lr(static_cast<double>(*step), s));
  };
}

OpDef lr_schedule_def() {
  OpDef d;
  d.name = "lr_schedule";
  d.min_inputs = d.max_inputs = 1;
  d.attrs = {{"base_lr", ir::AttrKind::Float, ir::AttrValue{6e-4}},
             {"warmup_steps", ir::AttrKind::Int, std::nullopt},
             {"total_steps", ir::AttrKind::Int, std::nullopt},
             {"min_lr", ir::AttrKind::Float, ir::AttrValue{6e-5}}};
  d.infer = lr_schedule_infer;
  d.kernel = lr_schedule_kernel;
  return d;
}

const OpRegistration lr_schedule_op{lr_schedule_def()};

}  // namespace

}  // namespace plexus::ops
