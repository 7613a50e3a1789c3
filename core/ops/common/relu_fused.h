// Ops fused with the relu that reads their output (the relu-epilogue rewrite,
// core/compile/relu_fusion.h): `<op>_relu` is op `<op>` with a kernel that writes relu(y)
// where `<op>` writes y, as the last step of its stores (oneDNN's post-ops). Each is
// registered beside its op (conv2d_relu, max_pool2d_relu), so that a relu epilogue is an
// ordinary op with a kernel of its own. The rewrite makes them after autodiff: they have
// no gradient rule.
#pragma once

#include <functional>
#include <utility>

#include "core/ops/op_def.h"

namespace plexus::ops {

/// The op `base` followed by relu: named base.name + "_relu", with base's inputs,
/// attributes, shape inference, scratch and in-place permission, and `kernel` as its
/// kernel. Pure.
inline OpDef relu_fused_def(const OpDef& base, std::function<Kernel(const KernelContext&)> kernel) {
  OpDef d;
  d.name = base.name + "_relu";
  d.min_inputs = base.min_inputs;
  d.max_inputs = base.max_inputs;
  d.attrs = base.attrs;
  d.resolve_attrs = base.resolve_attrs;
  d.infer = base.infer;
  d.kernel = std::move(kernel);
  d.scratch = base.scratch;
  d.may_inplace = base.may_inplace;
  return d;
}

}  // namespace plexus::ops
