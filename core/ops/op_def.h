// How an op family file defines an op: its schema (ir::OpSchema, what the IR knows) and
// its kernel (ops::KernelDef, how it runs) written side by side as one ops::OpDef, which
// OpRegistration splits into the two registries under the op's type name. A reader finds
// an op's shape inference, gradient rule and kernel together in its family folder.
#pragma once

#include "core/ir/op_schema.h"
#include "core/ops/kernel_def.h"

namespace plexus::ops {

/// An op's schema and kernel together, as its family file builds them (`d.infer = ...;
/// d.kernel = ...;`). Only registration reads it: the IR sees the schema half and
/// compile and the runtime the kernel half, each from its own registry.
struct OpDef : ir::OpSchema, KernelDef {};

/// Registers `def`'s schema in ir::OpSchemaRegistry and its kernel in KernelRegistry, both
/// under def.name, at static-initialisation time: `const OpRegistration r{some_def()};`.
/// Internal error when the type is registered already.
struct OpRegistration {
  explicit OpRegistration(const OpDef& def);
};

}  // namespace plexus::ops
