// conv2d -> relu -> max_pool2d (seed 002's Conv2D(relu) -> MaxPooling2D) and conv2d ->
// max_pool2d -> relu (seed 003's Conv blocks) as fused ops of their own, one kernel per pass
// that makes a few images at a time, so that the conv output ([N,F,OH,OW], 5.5 MB in seed
// 002 at batch 64) is never stored: each image's conv output is made in scratch (86 KB
// there, in L2) and pooled at once. The compile rewrite core/compile/conv_pool_fusion.h
// makes them from the ops of a graph; they may also be added by name.
//
//   conv2d_relu_max_pool2d(x [N,C,H,W], w [F,C,KH,KW] [, b [F]]; stride, padding,
//                          pool_kernel, pool_stride, pool_padding, relu_first)
//     -> y [N,F,PH,PW]: max_pool2d(relu(conv2d(x, w, b))) with relu_first = 1, else
//     relu(max_pool2d(conv2d(x, w, b))); conv2d's attributes and max_pool2d's (prefixed).
//   conv2d_relu_max_pool2d_grad_weight(x, w [, b], dy [N,F,PH,PW]; the same attributes,
//                                      relu_folded) -> dw [F,C,KH,KW] [, db [F]]
//     the weight (and bias) gradients of conv2d through the pool, given dy, the pool
//     output's gradient; relu_folded as max_pool2d_grad's (the relu's gradient applied at
//     the pool). It recomputes each image's conv output (the forward kernel, ~8 % of a seed
//     002 step), takes the pool gradient over it in place, adds the image into dw's sums
//     (ConvPlan::grad_weight_add, in grad_weight's chunks) and into db (row_sum per filter
//     plane, in reduce_sum's order). Recomputing costs less than storing the conv output:
//     at two replicas, seed 002's kernels ran 1.6-2.6x slower with their arenas no longer
//     in the shared L3 (bench/README.md, stop 30).
// Both give the unfused ops' bits: the same kernels on the same values in the same order.
// They need the pool's windows to tile the plane (pool_kernel == pool_stride, 2 or 3, no
// padding: the pool gradient then runs in place); other windows are InvalidArgument. No
// gradient rule: the rewrite makes them after autodiff.
#include <algorithm>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/row_sum.h"
#include "core/ops/conv/conv_gemm.h"
#include "core/ops/pool/max_pool.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;

/// The pool's attributes, under max_pool2d's names.
ir::Attributes pool_attrs(const ir::Attributes& attrs) {
  ir::Attributes pool;
  for (const char* name : {"kernel", "stride", "padding"}) {
    pool.set(name, ir::AttrValue{attrs.get_ints(std::string("pool_") + name)});
  }
  return pool;
}

/// The op `type`'s shape inference on `inputs` with `attrs`, as the fused op `ctx` (whose
/// name its errors carry).
ir::InferResult infer_as(const char* type, const ir::InferContext& ctx, std::vector<const ir::TensorInfo*> inputs,
                         const ir::Attributes& attrs) {
  const ir::InferContext part{ctx.op_name, std::move(inputs), attrs, ctx.replication_factor, ctx.graph};
  return ir::OpSchemaRegistry::instance().find(type)->infer(part);
}

/// The fused ops' shapes and plans: the conv's geometry, the pool of one image's conv
/// output ([F, OH, OW] planes), and whether the relu runs on the conv output (seed 002's
/// order) or on the pool's (seed 003's).
struct ConvPool {
  ConvGeometry conv_geometry;
  PoolGeometry image_pool;
  bool relu_first = false;

  /// Floats of `images` images' conv output.
  int64_t tile_floats(int64_t images) const { return images * conv_geometry.out_image(); }
  /// Floats of one image's pooled output.
  int64_t pooled_image() const { return image_pool.nc * image_pool.oh * image_pool.ow; }
  /// Scratch of the forward kernel: one image's conv output, then the conv's own scratch.
  size_t forward_scratch() const {
    return static_cast<size_t>(tile_floats(1)) * sizeof(float) +
           static_cast<size_t>(ConvPlan(conv_geometry, ConvPass::Forward).scratch_bytes());
  }
  /// Scratch of the gradient kernel: the weight gradient's chunk of conv outputs, the
  /// conv's scratch, the weight gradient's sums.
  size_t grad_scratch() const {
    const ConvPlan weight(conv_geometry, ConvPass::GradWeight);
    return forward_scratch() + static_cast<size_t>(tile_floats(weight.grad_weight_images() - 1)) * sizeof(float) +
           static_cast<size_t>(weight.scratch_bytes());
  }
};

ConvPool describe(const ir::Shape& x, const ir::Shape& w, const ir::Attributes& attrs) {
  ConvPool cp{conv_geometry(x, w, attrs), {}, attrs.get_int("relu_first") != 0};
  const ConvGeometry& c = cp.conv_geometry;
  cp.image_pool = pool_geometry({1, c.f, c.oh, c.ow}, pool_attrs(attrs));
  return cp;
}

/// Checks x, w[, b] and the attributes as conv2d and max_pool2d do, and that the pool's
/// windows tile the conv output; returns the pooled output's type and the geometry.
ir::TensorType infer_forward(const ir::InferContext& ctx, ConvPool& cp) {
  ir::TensorInfo conv_out;
  conv_out.shape = infer_as("conv2d", ctx, ctx.inputs, ctx.attrs).outputs[0].shape;
  const ir::TensorType pooled = infer_as("max_pool2d", ctx, {&conv_out}, pool_attrs(ctx.attrs)).outputs[0];
  const int64_t relu_first = ctx.attrs.get_int("relu_first");
  if (relu_first != 0 && relu_first != 1) {
    ctx.fail(ErrorCode::InvalidArgument, "relu_first is " + std::to_string(relu_first) + ", must be 0 or 1");
  }
  cp = describe(ctx.shape(0), ctx.shape(1), ctx.attrs);
  if (!cp.image_pool.tiles(2) && !cp.image_pool.tiles(3)) {
    ctx.fail(ErrorCode::InvalidArgument, "the pool's windows must tile the plane (pool_kernel == pool_stride, 2 or 3, "
                                         "no pool_padding)");
  }
  return pooled;
}

ir::InferResult infer_fused(const ir::InferContext& ctx) {
  ConvPool cp;
  return {{infer_forward(ctx, cp)}};
}

Kernel fused_kernel(const KernelContext& ctx) {
  const ConvPool cp = describe(ctx.inputs[0]->shape, ctx.inputs[1]->shape, ctx.op.attrs);
  auto* tile = reinterpret_cast<float*>(ctx.scratch);
  return [cp, plan = ConvPlan(cp.conv_geometry, ConvPass::Forward), pool = MaxPoolPlan(cp.image_pool), tile,
          conv_scratch = tile + cp.tile_floats(1), x = ctx.input<float>(0), w = ctx.input<float>(1),
          b = ctx.inputs.size() == 3 ? ctx.input<float>(2) : nullptr, y = ctx.output<float>(0)] {
    for (int64_t n = 0; n < cp.conv_geometry.n; ++n) {
      plan.forward_images(x, w, b, tile, conv_scratch, cp.relu_first, n, 1);
      max_pool_forward(pool, tile, y + n * cp.pooled_image(), !cp.relu_first);
    }
  };
}

/// The gradient op: the forward op's checks on x, w[, b], dy of the pooled shape, and
/// relu_folded 0 or 1; outputs dw[, db].
ir::InferResult infer_fused_grad(const ir::InferContext& ctx) {
  const size_t dy = ctx.inputs.size() - 1;
  const ir::InferContext forward{ctx.op_name, {ctx.inputs.begin(), ctx.inputs.begin() + static_cast<long>(dy)},
                                 ctx.attrs, ctx.replication_factor, ctx.graph};
  ConvPool cp;
  const ir::TensorType pooled = infer_forward(forward, cp);
  ctx.expect_dtype(dy, DType::Float32);
  if (ctx.shape(dy) != pooled.shape) {
    ctx.fail(ErrorCode::ShapeMismatch, "dy must have the pooled output's shape " + ir::shape_string(pooled.shape));
  }
  const int64_t folded = ctx.attrs.get_int("relu_folded");
  if (folded != 0 && folded != 1) {
    ctx.fail(ErrorCode::InvalidArgument, "relu_folded is " + std::to_string(folded) + ", must be 0 or 1");
  }
  ir::InferResult r{{{DType::Float32, ctx.shape(1)}}};
  if (dy == 3) r.outputs.push_back({DType::Float32, ctx.shape(2)});
  return r;
}

/// The gradient kernel's buffers and plans, bound at session creation.
struct GradKernel {
  ConvPool cp;
  ConvPlan forward, weight;
  MaxPoolPlan pool;
  bool relu_folded;
  const float *x, *w, *b, *dy;
  float *dw, *db;
  float *tile, *conv_scratch, *weight_scratch;

  /// The conv output's gradient of images [n0, n0 + images) into tile, and those images
  /// added to db.
  void conv_output_grad(int64_t n0, int64_t images) const {
    const ConvGeometry& g = cp.conv_geometry;
    forward.forward_images(x, w, b, tile, conv_scratch, cp.relu_first, n0, images);
    for (int64_t i = 0; i < images; ++i) {
      float* image = tile + i * g.out_image();
      max_pool_grad(pool, image, dy + (n0 + i) * cp.pooled_image(), image, relu_folded);
      for (int64_t f = 0; db && f < g.f; ++f) db[f] = plus(db[f], row_sum(image + f * g.p(), g.p()));
    }
  }

  void operator()() const {
    const ConvGeometry& g = cp.conv_geometry;
    if (db) std::fill(db, db + g.f, 0.0f);
    const int64_t chunk = weight.grad_weight_images();
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t images = std::min(chunk, g.n - n0);
      conv_output_grad(n0, images);
      weight.grad_weight_add(x + n0 * g.image(), tile, n0, images, dw, weight_scratch);
    }
    weight.grad_weight_end(dw, weight_scratch);
  }
};

Kernel fused_grad_kernel(const KernelContext& ctx) {
  const ConvPool cp = describe(ctx.inputs[0]->shape, ctx.inputs[1]->shape, ctx.op.attrs);
  const bool bias = ctx.inputs.size() == 4;
  const ConvPlan forward(cp.conv_geometry, ConvPass::Forward), weight(cp.conv_geometry, ConvPass::GradWeight);
  auto* tile = reinterpret_cast<float*>(ctx.scratch);
  float* conv_scratch = tile + cp.tile_floats(weight.grad_weight_images());
  float* weight_scratch = conv_scratch + forward.scratch_bytes() / static_cast<int64_t>(sizeof(float));
  return GradKernel{cp,
                    forward,
                    weight,
                    MaxPoolPlan(cp.image_pool),
                    ctx.op.attrs.get_int("relu_folded") != 0,
                    ctx.input<float>(0),
                    ctx.input<float>(1),
                    bias ? ctx.input<float>(2) : nullptr,
                    ctx.input<float>(bias ? 3 : 2),
                    ctx.output<float>(0),
                    bias ? ctx.output<float>(1) : nullptr,
                    tile,
                    conv_scratch,
                    weight_scratch};
}

/// conv2d's attributes and max_pool2d's, prefixed "pool_", with their defaults.
std::vector<ir::AttrSpec> fused_attrs() {
  const auto ints = [](std::vector<int64_t> v) { return ir::AttrValue{std::move(v)}; };
  return {{"stride", ir::AttrKind::Ints, ints({1, 1})},       {"padding", ir::AttrKind::Ints, ints({0, 0})},
          {"pool_kernel", ir::AttrKind::Ints, std::nullopt},   {"pool_stride", ir::AttrKind::Ints, ints({})},
          {"pool_padding", ir::AttrKind::Ints, ints({0, 0})}, {"relu_first", ir::AttrKind::Int, std::nullopt}};
}

OpDef fused_def() {
  OpDef d;
  d.name = "conv2d_relu_max_pool2d";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.attrs = fused_attrs();
  d.infer = infer_fused;
  d.kernel = fused_kernel;
  d.scratch = [](const ir::InferContext& ctx) { return describe(ctx.shape(0), ctx.shape(1), ctx.attrs).forward_scratch(); };
  return d;
}

OpDef fused_grad_def() {
  OpDef d = fused_def();
  d.name += "_grad_weight";
  ++d.min_inputs;  // dy
  ++d.max_inputs;
  d.attrs.push_back({"relu_folded", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}});
  d.infer = infer_fused_grad;
  d.kernel = fused_grad_kernel;
  d.scratch = [](const ir::InferContext& ctx) { return describe(ctx.shape(0), ctx.shape(1), ctx.attrs).grad_scratch(); };
  return d;
}

const OpRegistration fused_op{fused_def()};
const OpRegistration fused_grad_op{fused_grad_def()};

}  // namespace

}  // namespace plexus::ops
