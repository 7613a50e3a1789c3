// The conv -> relu -> max-pool rewrite (conv_pool_fusion.h).
#include "core/compile/conv_pool_fusion.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>

#include "core/ir/error.h"

namespace plexus::compile {

namespace {

/// The attributes that place max_pool2d's windows (and its gradient's).
constexpr const char* kWindowAttrs[] = {"kernel", "stride", "padding"};

/// The ops around one conv2d that a pair of groups would hold (conv_pool_fusion.h).
struct Candidate {
  ir::OpId conv = -1, relu = -1, pool = -1, pool_grad = -1, grad_weight = -1, bias_grad = -1;
  std::vector<ir::TensorId> between;  ///< the tensors never stored: conv, relu / pool, pool gradient outputs
};

/// The forward group's ops and the gradient group's, each in op order.
std::vector<ir::OpId> forward_ops(const Candidate& c) {
  std::vector<ir::OpId> ops{c.conv, c.relu, c.pool};
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::vector<ir::OpId> gradient_ops(const Candidate& c) {
  std::vector<ir::OpId> ops{c.pool_grad, c.grad_weight};
  if (c.bias_grad >= 0) ops.push_back(c.bias_grad);
  std::sort(ops.begin(), ops.end());
  return ops;
}

class Matcher {
 public:
  Matcher(const ir::Graph& g, const std::vector<int32_t>& op_stage) : g_(g), op_stage_(op_stage) {}

  /// The groups of conv2d `conv`, or nothing when it does not group.
  std::optional<Candidate> match(ir::OpId conv) const {
    Candidate c;
    c.conv = conv;
    const ir::TensorId y = output(conv);
    const std::vector<ir::OpId> readers = g_.consumers(y);
    const bool relu_first = readers.size() == 1 && is(readers[0], "relu");
    if (relu_first) {  // seed 002: conv -> relu -> pool
      c.relu = readers[0];
      if (!pool_and_gradient(c, output(c.relu))) return std::nullopt;
    } else {  // seed 003: conv -> pool -> relu
      if (!pool_and_gradient(c, y)) return std::nullopt;
      const std::vector<ir::OpId> after = g_.consumers(output(c.pool));
      if (after.size() != 1 || !is(after[0], "relu")) return std::nullopt;
      c.relu = after[0];
    }
    if (!weight_and_bias_gradients(c)) return std::nullopt;
    c.between = {y, output(relu_first ? c.relu : c.pool), output(c.pool_grad)};
    if (!private_and_on_one_stage(c)) return std::nullopt;
    return c;
  }

 private:
  bool is(ir::OpId op, const char* type) const { return g_.op(op).schema->name == type; }
  ir::TensorId output(ir::OpId op) const { return g_.op(op).outputs[0]; }

  /// t's readers are a max_pool2d of t and its gradient (with the pool's windows): sets
  /// c.pool and c.pool_grad.
  bool pool_and_gradient(Candidate& c, ir::TensorId t) const {
    const std::vector<ir::OpId> readers = g_.consumers(t);
    if (readers.size() != 2) return false;
    for (ir::OpId r : readers) {
      if (is(r, "max_pool2d")) c.pool = r;
      if (is(r, "max_pool2d_grad") && g_.op(r).inputs[0] == t) c.pool_grad = r;
    }
    if (c.pool < 0 || c.pool_grad < 0) return false;
    const ir::Attributes &pool = g_.op(c.pool).attrs, &grad = g_.op(c.pool_grad).attrs;
    return std::all_of(std::begin(kWindowAttrs), std::end(kWindowAttrs),
                       [&](const char* a) { return pool.get_ints(a) == grad.get_ints(a); });
  }

  /// The pool gradient's output is read by the conv's weight gradient (of its x) and, with
  /// a bias, the bias gradient alone: sets c.grad_weight and c.bias_grad.
  bool weight_and_bias_gradients(Candidate& c) const {
    const ir::Op& conv = g_.op(c.conv);
    const ir::TensorId dy = output(c.pool_grad);
    for (ir::OpId r : g_.consumers(dy)) {
      const ir::Op& op = g_.op(r);
      if (is(r, "conv2d_grad_weight") && op.inputs[0] == conv.inputs[0] && op.inputs[1] == dy &&
          g_.tensor(op.outputs[0]).shape == g_.tensor(conv.inputs[1]).shape &&
          op.attrs.get_ints("stride") == conv.attrs.get_ints("stride") &&
          op.attrs.get_ints("padding") == conv.attrs.get_ints("padding") && c.grad_weight < 0) {
        c.grad_weight = r;
      } else if (is(r, "reduce_sum") && conv.inputs.size() == 3 && c.bias_grad < 0 &&
                 op.attrs.get_ints("axes") == std::vector<int64_t>{0, 2, 3} && op.attrs.get_int("keepdims") == 0) {
        c.bias_grad = r;
      } else {
        return false;
      }
    }
    return c.grad_weight >= 0;
  }

  /// Every intermediate is its own buffer and not streamed, every op on the conv's stage,
  /// and each group's ops in one phase with its leader first.
  bool private_and_on_one_stage(const Candidate& c) const {
    for (ir::TensorId t : c.between) {
      if (g_.storage_root(t) != t || g_.streamed(t)) return false;
    }
    const auto stage = [this](ir::OpId o) { return op_stage_[static_cast<size_t>(o)]; };
    const std::vector<ir::OpId> forward = forward_ops(c), gradient = gradient_ops(c);
    const auto uniform = [&](const std::vector<ir::OpId>& ops) {
      return std::all_of(ops.begin(), ops.end(), [&](ir::OpId o) {
        return stage(o) == stage(c.conv) && g_.op(o).phase == g_.op(ops[0]).phase;
      });
    };
    return uniform(forward) && uniform(gradient) && forward[0] == c.conv && gradient[0] == c.pool_grad;
  }

 private:
  const ir::Graph& g_;
  const std::vector<int32_t>& op_stage_;
};

/// The fused ops' attributes: the conv's, the pool's prefixed "pool_", and the relu's place.
ir::Attributes fused_attrs(const ir::Graph& g, const Candidate& c) {
  ir::Attributes attrs;
  const ir::Attributes &conv = g.op(c.conv).attrs, &pool = g.op(c.pool).attrs;
  for (const char* a : {"stride", "padding"}) attrs.set(a, ir::AttrValue{conv.get_ints(a)});
  for (const char* a : kWindowAttrs) attrs.set(std::string("pool_") + a, ir::AttrValue{pool.get_ints(a)});
  attrs.set("relu_first", ir::AttrValue{int64_t{c.relu < c.pool}});
  return attrs;
}

/// Rewrites c's gradient ops, then its forward ops (the gradient's ids are the larger), and
/// drops the removed ops' stages. False, and nothing changed, when the fused ops refuse the
/// pool's windows: their shape inference is the one place that knows what their kernels take.
bool fuse(ir::Graph& g, const Candidate& c, std::vector<int32_t>& op_stage) {
  const std::vector<ir::TensorId> x = g.op(c.conv).inputs;  // x, w[, b]
  const std::vector<ir::OpId> forward = forward_ops(c), gradient = gradient_ops(c);
  std::vector<ir::TensorId> gradient_inputs = x;
  gradient_inputs.push_back(g.op(c.pool_grad).inputs[1]);
  std::vector<ir::TensorId> gradients{g.op(c.grad_weight).outputs[0]};
  if (c.bias_grad >= 0) gradients.push_back(g.op(c.bias_grad).outputs[0]);
  ir::Attributes attrs = fused_attrs(g, c), gradient_attrs = attrs;
  gradient_attrs.set("relu_folded", ir::AttrValue{g.op(c.pool_grad).attrs.get_int("relu_folded")});
  try {
    g.fuse_ops(gradient, "conv2d_relu_max_pool2d_grad_weight", gradient_inputs, gradient_attrs, gradients);
  } catch (const ir::Error& e) {
    if (e.code() != ir::ErrorCode::InvalidArgument) throw;
    return false;
  }
  g.fuse_ops(forward, "conv2d_relu_max_pool2d", x, attrs, {g.op(forward.back()).outputs[0]});
  for (const std::vector<ir::OpId>* ops : {&gradient, &forward}) {
    for (auto it = ops->rbegin(); it + 1 != ops->rend(); ++it) op_stage.erase(op_stage.begin() + *it);
  }
  return true;
}

}  // namespace

size_t fuse_conv_pool_groups(ir::Graph& graph, std::vector<int32_t>& op_stage) {
  size_t made = 0;
  for (size_t o = 0; o < graph.num_ops(); ++o) {  // a rewrite removes ops after o only
    const auto conv = static_cast<ir::OpId>(o);
    if (graph.op(conv).schema->name != "conv2d") continue;
    const std::optional<Candidate> c = Matcher(graph, op_stage).match(conv);
    if (c && fuse(graph, *c, op_stage)) ++made;
  }
  return made;
}

}  // namespace plexus::compile
