// float16 ops computed in float32, as the IPU's matmul and convolution accumulate float16
// in float32 (PopXL's partialsType float): the op's float16 inputs are widened into float32
// copies, the op's float32 kernel runs on them, and its float32 outputs are rounded once
// to float16 (nearest even). The copies live in the op's scratch, at its start, so the
// memory plan counts them (the op's scratch rule is with_float32_copies of its float32
// kernel's); the float32 kernel's own scratch follows them. The bits equal those of the
// float32 kernel run on the float16 inputs' values, then rounded.
#pragma once

#include <cstddef>
#include <functional>

#include "core/ir/op_schema.h"
#include "core/ops/kernel_context.h"

namespace plexus::ops {

/// Builds a kernel for float32 tensors (the op's ordinary kernel factory).
using Float32KernelBuilder = std::function<Kernel(const KernelContext&)>;

/// A scratch rule (KernelDef::scratch): bytes from an op's input types and attributes.
using ScratchRule = std::function<size_t(const ir::InferContext&)>;

/// True when an input or an output of the op is float16.
bool has_float16(const KernelContext& ctx);

/// build(ctx) when the op has no float16 tensor; else the kernel described above, with
/// build given a context whose float16 tensors are float32 and point at the copies in
/// ctx.scratch, and whose scratch is the rest of it. Throws ir::Error (Internal) when the
/// scratch is missing (the op's scratch rule is not with_float32_copies').
Kernel compute_in_float32(const KernelContext& ctx, const Float32KernelBuilder& build);

/// The scratch rule of an op whose kernel is compute_in_float32's: the float32 copies of
/// its float16 inputs and outputs (each aligned to 64 bytes; the outputs' types from the
/// op's schema), then `scratch` (null: none).
ScratchRule with_float32_copies(ScratchRule scratch);

/// Checks that inputs [0, count) are all float32 or all float16 (DTypeMismatch naming the
/// op otherwise) and returns that dtype.
ir::DType expect_float_inputs(const ir::InferContext& ctx, size_t count);

}  // namespace plexus::ops
