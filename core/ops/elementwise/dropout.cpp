// dropout(x float32; p=0.5, seed=0) -> float32, x's shape: inverted dropout (PyTorch
// F.dropout(x, p, training=True), ONNX Dropout). In a training program (autodiff ran) each
// element is kept with probability 1 - p and scaled by 1 / (1 - p), else set to 0; in an
// inference program the op is the identity. p in [0, 1).
//
// The mask is counter-based (no state, reproducible): element i is kept when
//   (bits >> 40) >= ceil(p * 2^24), i.e. u >= p for u = (bits >> 40) / 2^24 in [0, 1),
//   bits = splitmix64 output number i + 1 from the state
//          base = mix(mix(mix(mix(seed) ^ micro_batch) ^ replica) ^ key),
// where mix is splitmix64's finaliser applied to (z + 0x9e3779b97f4a7c15), micro_batch is
// KernelContext::micro_batch_counter (micro-batches the session ran before), replica the
// global replica index and key the op's output tensor id. Every micro-batch, replica and
// dropout op so draws its own mask, and a session restored from a checkpoint draws the
// masks the original would have.
//
// dropout_grad(dy; p, seed, key) = dy * the same mask / (1 - p): the gradient rule passes
// the forward op's key, and the mask is drawn again rather than stored.
#include <cmath>
#include <cstring>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

uint64_t finalise(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t mix(uint64_t z) { return finalise(z + kGolden); }

// The mask of one (seed, micro-batch, replica, key), element by element.
struct Mask {
  uint64_t base;
  uint32_t threshold;  ///< keep when the top 24 bits are >= this

  Mask(double p, int64_t seed, int64_t micro_batch, int64_t replica, int64_t key)
      : base(mix(mix(mix(mix(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(micro_batch)) ^
                     static_cast<uint64_t>(replica)) ^
                 static_cast<uint64_t>(key))),
        threshold(static_cast<uint32_t>(std::ceil(p * 16777216.0))) {}

  bool keep(int64_t i) const { return (finalise(base + static_cast<uint64_t>(i + 1) * kGolden) >> 40) >= threshold; }
};

// Training program: autodiff ran on the graph (compile/program.h, is_training).
bool training(const ir::Graph& graph) { return graph.phase() != ir::Phase::Forward; }

void check_p(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  const double p = ctx.attrs.get_float("p");
  if (!(p >= 0.0 && p < 1.0)) ctx.fail(ErrorCode::InvalidArgument, "p " + std::to_string(p) + " must be in [0, 1)");
}

// out = in * mask / (1 - p) for the mask of `key`, or a copy outside training.
Kernel masked_scale(const KernelContext& ctx, int64_t key) {
  const int64_t n = ir::numel(ctx.inputs[0]->shape);
  const float* in = ctx.input<float>(0);
  float* out = ctx.output<float>(0);
  if (!training(ctx.graph)) {
    return [in, out, n] { std::memmove(out, in, static_cast<size_t>(n) * sizeof(float)); };
  }
  if (!ctx.micro_batch_counter) ir::fail(ErrorCode::Internal, ctx.op.name + ": no micro-batch counter");
  const double p = ctx.op.attrs.get_float("p");
  return [in, out, n, p, seed = ctx.op.attrs.get_int("seed"), replica = ctx.replica, key,
          counter = ctx.micro_batch_counter, scale = static_cast<float>(1.0 / (1.0 - p))] {
    const Mask mask(p, seed, *counter, replica, key);
    for (int64_t i = 0; i < n; ++i) out[i] = mask.keep(i) ? in[i] * scale : 0.0f;
  };
}

std::vector<ir::AttrSpec> mask_attrs() {
  return {{"p", ir::AttrKind::Float, ir::AttrValue{0.5}}, {"seed", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
}

OpDef dropout_def() {
  OpDef d;
  d.name = "dropout";
  d.attrs = mask_attrs();
  d.infer = [](const ir::InferContext& ctx) {
    check_p(ctx);
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.kernel = [](const KernelContext& ctx) { return masked_scale(ctx, ctx.op.outputs[0]); };
  d.grad = [](ir::GradContext& ctx) {
    ir::Attributes attrs = ctx.op.attrs;
    attrs.set("key", int64_t{ctx.op.outputs[0]});
    return std::vector<TensorId>{ctx.add("dropout_grad", {ctx.output_grads[0]}, attrs)};
  };
  return d;
}

OpDef dropout_grad_def() {
  OpDef d;
  d.name = "dropout_grad";
  d.attrs = mask_attrs();
  d.attrs.push_back({"key", ir::AttrKind::Int, std::nullopt});
  d.infer = [](const ir::InferContext& ctx) {
    check_p(ctx);
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.kernel = [](const KernelContext& ctx) { return masked_scale(ctx, ctx.op.attrs.get_int("key")); };
  return d;
}

const OpRegistration dropout_op{dropout_def()};
const OpRegistration dropout_grad_op{dropout_grad_def()};

}  // namespace

}  // namespace plexus::ops
