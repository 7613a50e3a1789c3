// Harness for the op tests: runs one op through a real Session and checks it against a
// double-precision reference written in the test.
//
//   Value            host data of one tensor; float32 values are rounded to float when the
//                    Value is made, so the reference sees exactly what Plexus sees.
//   run_op           graph = the inputs as variables + one op + a d2h stream per output.
//   expect_forward   output 0 of the op vs the reference, within a stated tolerance.
//   expect_gradients forward check, then loss = reduce_sum(y * R) with a fixed random
//                    constant R, autodiff for the requested inputs, and each analytic
//                    (float32) gradient vs central differences of the double reference.
//   op_error         the ir::Error raised while building or running the op
//                    (expect_build_error: raised while building, with a given code).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/attributes.h"
#include "core/ir/dtype.h"
#include "core/ir/error.h"
#include "core/ir/graph.h"
#include "core/ir/shape.h"

namespace plexus::ops::test {

/// Host data of one tensor, each element held as a double (exact for every dtype).
struct Value {
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;
  std::vector<double> data;  ///< row-major
};

/// float32 tensor; values are rounded to float32 now.
Value f32(ir::Shape shape, std::vector<double> data);
/// int32 tensor; every value must be an int32.
Value i32(ir::Shape shape, std::vector<double> data);
/// uint8 tensor; every value must be in [0, 255].
Value u8(ir::Shape shape, std::vector<double> data);
/// float16 tensor; values are rounded to float16 (nearest even) now.
Value f16(ir::Shape shape, std::vector<double> data);
/// A tensor of any dtype: floats rounded as f32 / f16 do, other values must be exact in it
/// (bool: 0 or 1).
Value typed(ir::DType dtype, ir::Shape shape, std::vector<double> data);

/// Host bytes of `v` in its dtype, and back.
std::vector<std::byte> to_bytes(const Value& v);
Value from_bytes(ir::DType dtype, const ir::Shape& shape, const std::vector<std::byte>& bytes);

/// Uniform random values in [lo, hi) with |v| >= min_abs (to keep away from kinks), drawn
/// from a fixed-seed generator: same seed, same values.
std::vector<double> random_values(int64_t count, double lo, double hi, uint32_t seed, double min_abs = 0.0);
/// A float32 tensor of random values (see random_values).
Value random_f32(ir::Shape shape, uint32_t seed, double lo = -1.0, double hi = 1.0, double min_abs = 0.0);

/// Runs a copy of `graph` once, with a d2h stream added for each of `outputs`, in a Session
/// with one BLIS thread, and returns the outputs in the order asked for. The graph must
/// have no host-to-device streams.
std::vector<Value> evaluate(const ir::Graph& graph, const std::vector<ir::TensorId>& outputs);

/// Adds `inputs` to `graph` as variables "in0", "in1", ... and returns their ids.
std::vector<ir::TensorId> add_inputs(ir::Graph& graph, const std::vector<Value>& inputs);

/// Runs op `type` once on `inputs` (each a variable) and returns every output.
std::vector<Value> run_op(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs = {});
/// Output 0 of run_op.
Value run_op1(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs = {});

/// Where an op failed.
enum class Stage { None, Build, Run };

/// The first ir::Error raised while adding the op to a graph (Build) or while running it
/// (Run); stage None (and a test failure) when nothing failed.
struct OpError {
  Stage stage = Stage::None;
  ir::ErrorCode code = ir::ErrorCode::Internal;
  std::string message;
};
OpError op_error(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs = {});
/// op_error, expecting it to have failed while the op was added (Stage::Build) with `code`
/// and a message that names the op.
OpError expect_build_error(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs,
                           ir::ErrorCode code);

/// |actual - expected| <= atol + rtol * |expected|, elementwise.
struct Tolerance {
  double atol;
  double rtol;
};

/// Forward tolerance for float32 kernels vs a double reference on inputs of magnitude
/// about 1: float32's unit roundoff is 6e-8, and the longest accumulations in these tests
/// (matmul K <= 64, sums of <= 120 elements) stay well below 1e-5 absolute error; the
/// relative part covers outputs of magnitude up to ~100.
inline constexpr Tolerance kForwardTolerance{1e-5, 1e-5};

/// Gradient tolerance, analytic (float32, from Plexus) vs numeric (central differences of
/// the double reference, eps = 1e-6). The numeric side is accurate to ~1e-8: truncation
/// error is O(eps^2 * f''') ~ 1e-12 and cancellation error O(1e-16 * |loss| / eps) ~ 1e-9
/// for |loss| <= 10. So the tolerance budgets the float32 side: a gradient is a short chain
/// of float32 kernels, each summing <= 64 products of O(1) terms, i.e. an absolute error of
/// at most ~64 * 6e-8 * O(1) ~ 4e-6 per stage, 1e-4 with a wide margin; the 1e-3 relative
/// part covers gradients of magnitude > 0.1 with the same margin. A wrong rule (a missing
/// factor, a wrong transpose or broadcast) is off by O(|gradient|), far outside this.
inline constexpr Tolerance kGradientTolerance{1e-4, 1e-3};

/// Central-difference step on the double reference.
inline constexpr double kFiniteDifferenceEps = 1e-6;

/// A double-precision implementation of an op: output 0 from the op's inputs.
using Reference = std::function<Value(const std::vector<Value>& inputs)>;

/// Expects `actual` to have `expected`'s dtype and shape and values within `tol`.
/// `what` names the comparison in failure messages.
void expect_close(const Value& actual, const Value& expected, Tolerance tol, const std::string& what);
/// Expects identical dtype, shape and values (integer results, exact float cases).
/// NaN equals NaN here.
void expect_equal(const Value& actual, const Value& expected, const std::string& what);

/// Runs the op and compares output 0 with `reference(inputs)`.
void expect_forward(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs,
                    const Reference& reference, Tolerance tol = kForwardTolerance);

struct GradCheckOptions {
  /// Inputs to differentiate with respect to; empty = every float32 input.
  std::vector<size_t> wrt;
  Tolerance forward = kForwardTolerance;
  Tolerance gradient = kGradientTolerance;
  double eps = kFiniteDifferenceEps;
  uint32_t seed = 12345;  ///< of the loss weights R, uniform in [-1, 1)
  /// Checks at most this many elements of each `wrt` input, drawn without repetition by a
  /// fixed-seed generator (0 = every element). For inputs so large that differentiating the
  /// reference at every element would take seconds (each element costs two reference runs);
  /// the forward check still covers every output element.
  size_t sample = 0;
};

/// Forward check plus finite-difference gradient check of every `wrt` input (see the
/// file comment). The op must have a single float32 output.
void expect_gradients(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs,
                      const Reference& reference, const GradCheckOptions& options = {});

/// The loss and gradients of a program built from `inputs`: {loss (one element), d loss /
/// d inputs[0], d loss / d inputs[1], ...}.
using LossAndGradients = std::function<std::vector<Value>(const std::vector<Value>& inputs)>;

/// Checks every gradient element `f` gives at `inputs` against the central difference of
/// its loss with step h, within `tol` (absolute).
void expect_finite_differences(const std::vector<Value>& inputs, const LossAndGradients& f, double h, double tol);

// --- double-precision building blocks for references ---------------------------------

/// numpy broadcast of two shapes (the test's own implementation, not Plexus's).
ir::Shape broadcast_shape(const ir::Shape& a, const ir::Shape& b);
/// `v` broadcast to `shape` (numpy broadcast_to), row-major.
std::vector<double> broadcast_to(const Value& v, const ir::Shape& shape);
/// Elementwise f(a, b) with numpy broadcasting; the result has dtype `dtype`.
Value broadcast_binary(const Value& a, const Value& b, ir::DType dtype, const std::function<double(double, double)>& f);
/// Elementwise f(x) with x's dtype and shape.
Value map_unary(const Value& x, const std::function<double(double)>& f);

/// Attributes from (name, value) pairs: make_attrs({{"axes", Ints{0, 2}}, {"keepdims", int64_t{1}}}).
using Ints = std::vector<int64_t>;
ir::Attributes make_attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> values);

}  // namespace plexus::ops::test
