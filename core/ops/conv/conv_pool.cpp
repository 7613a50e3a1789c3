// The conv -> relu -> max-pool groups' kernels (conv_pool.h).
#include "core/ops/conv/conv_pool.h"

#include <algorithm>

#include "core/ops/conv/conv_gemm.h"
#include "core/ops/pool/max_pool.h"
#include "core/ops/common/row_sum.h"

namespace plexus::ops {

namespace {

/// What both groups need: the conv's geometry and attributes, the pool of one image's conv
/// output ([F, OH, OW] planes), and whether the relu runs on the conv output (seed 002's
/// order) or on the pool's (seed 003's).
struct ConvPool {
  const ir::Op* conv;
  ConvGeometry conv_geometry;
  PoolGeometry image_pool;
  bool relu_first;

  /// Floats of `images` images' conv output.
  int64_t tile_floats(int64_t images) const { return images * conv_geometry.out_image(); }
  /// Floats of one image's pooled output.
  int64_t pooled_image() const { return image_pool.nc * image_pool.oh * image_pool.ow; }
  bool pool_tiles() const { return image_pool.tiles(2) || image_pool.tiles(3); }
};

/// The group's conv and pool ops: `conv` and the max_pool2d (or max_pool2d_grad) whose
/// attributes give the windows.
ConvPool describe(const ir::Graph& g, const ir::Op& conv, const ir::Op& pool, bool relu_first) {
  ConvPool cp{&conv, conv_geometry(g.tensor(conv.inputs[0]).shape, g.tensor(conv.inputs[1]).shape, conv.attrs), {},
              relu_first};
  const ConvGeometry& c = cp.conv_geometry;
  cp.image_pool = pool_geometry({1, c.f, c.oh, c.ow}, pool.attrs);
  return cp;
}

/// The forward group {conv2d, relu, max_pool2d} or {conv2d, max_pool2d, relu}.
ConvPool describe_forward(const ir::Graph& g, std::span<const ir::OpId> group) {
  const ir::Op& second = g.op(group[1]);
  const bool relu_first = second.def->name == "relu";
  return describe(g, g.op(group[0]), relu_first ? g.op(group[2]) : second, relu_first);
}

/// The gradient group {max_pool2d_grad, conv2d_grad_weight[, reduce_sum]}: the conv is the
/// producer of the pool gradient's x (pool first) or of the relu's input that x is.
ConvPool describe_grad(const ir::Graph& g, std::span<const ir::OpId> group) {
  const ir::Op& pool_grad = g.op(group[0]);
  const ir::Op* producer = &g.op(g.tensor(pool_grad.inputs[0]).producer);
  const bool relu_first = producer->def->name == "relu";
  if (relu_first) producer = &g.op(g.tensor(producer->inputs[0]).producer);
  return describe(g, *producer, pool_grad, relu_first);
}

/// Scratch of the forward kernel: one image's conv output, then the conv's own scratch.
size_t forward_scratch(const ConvPool& cp) {
  return static_cast<size_t>(cp.tile_floats(1)) * sizeof(float) +
         static_cast<size_t>(ConvPlan(cp.conv_geometry, ConvPass::Forward).scratch_bytes());
}

}  // namespace

std::optional<size_t> conv_pool_forward_scratch(const ir::Graph& graph, std::span<const ir::OpId> group) {
  const ConvPool cp = describe_forward(graph, group);
  if (!cp.pool_tiles()) return std::nullopt;
  return forward_scratch(cp);
}

ir::Kernel conv_pool_forward_kernel(const ir::KernelContext& ctx, std::span<const ir::OpId> group) {
  const ConvPool cp = describe_forward(ctx.graph, group);
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

std::optional<size_t> conv_pool_grad_scratch(const ir::Graph& graph, std::span<const ir::OpId> group) {
  const ConvPool cp = describe_grad(graph, group);
  if (!cp.pool_tiles()) return std::nullopt;
  const ConvPlan weight(cp.conv_geometry, ConvPass::GradWeight);
  return forward_scratch(cp) + static_cast<size_t>(cp.tile_floats(weight.grad_weight_images() - 1)) * sizeof(float) +
         static_cast<size_t>(weight.scratch_bytes());
}

namespace {

/// The gradient group's buffers and plans, bound at session creation.
struct GradGroup {
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

}  // namespace

ir::Kernel conv_pool_grad_kernel(const ir::KernelContext& ctx, std::span<const ir::OpId> group) {
  const ConvPool cp = describe_grad(ctx.graph, group);
  const bool bias = cp.conv->inputs.size() == 3;
  const ConvPlan forward(cp.conv_geometry, ConvPass::Forward), weight(cp.conv_geometry, ConvPass::GradWeight);
  auto* tile = reinterpret_cast<float*>(ctx.scratch);
  float* conv_scratch = tile + cp.tile_floats(weight.grad_weight_images());
  float* weight_scratch = conv_scratch + forward.scratch_bytes() / static_cast<int64_t>(sizeof(float));
  return GradGroup{cp,
                   forward,
                   weight,
                   MaxPoolPlan(cp.image_pool),
                   ctx.graph.op(group[0]).attrs.get_int("relu_folded") != 0,
                   ctx.input<float>(0),
                   ctx.input<float>(1),
                   bias ? ctx.input<float>(2) : nullptr,
                   ctx.input<float>(bias ? 3 : 2),
                   ctx.output<float>(0),
                   group.size() == 3 ? ctx.output<float>(1) : nullptr,
                   tile,
                   conv_scratch,
                   weight_scratch};
}

}  // namespace plexus::ops
