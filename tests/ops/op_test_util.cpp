#include "tests/ops/op_test_util.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/ir/autodiff.h"
#include "core/ir/dtype_dispatch.h"
#include "core/session/session.h"

namespace plexus::ops::test {

namespace {

int64_t count(const ir::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const ir::Shape& shape) { return ir::shape_string(shape); }

std::string dtype_text(ir::DType t) { return std::string(ir::dtype_name(t)); }

Value make(ir::DType dtype, ir::Shape shape, std::vector<double> data) {
  if (static_cast<int64_t>(data.size()) != count(shape)) {
    throw std::invalid_argument("test value of shape " + shape_text(shape) + " given " + std::to_string(data.size()) +
                                " elements");
  }
  return Value{dtype, std::move(shape), std::move(data)};
}

// Compares element by element; reports the first few mismatches and how many there were.
void compare(const Value& actual, const Value& expected, const std::string& what,
             const std::function<bool(double, double)>& ok, const std::string& rule) {
  if (actual.dtype != expected.dtype) {
    ADD_FAILURE() << what << ": dtype is " << dtype_text(actual.dtype) << ", expected " << dtype_text(expected.dtype);
    return;
  }
  if (actual.shape != expected.shape) {
    ADD_FAILURE() << what << ": shape is " << shape_text(actual.shape) << ", expected " << shape_text(expected.shape);
    return;
  }
  std::ostringstream detail;
  detail.precision(9);
  size_t bad = 0;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    if (ok(actual.data[i], expected.data[i])) continue;
    if (++bad <= 8) {
      detail << "\n  [" << i << "] got " << actual.data[i] << ", expected " << expected.data[i] << " (diff "
             << actual.data[i] - expected.data[i] << ")";
    }
  }
  if (bad) {
    ADD_FAILURE() << what << ": " << bad << " of " << actual.data.size() << " elements differ (" << rule << ")"
                  << detail.str();
  }
}

}  // namespace

std::vector<std::byte> to_bytes(const Value& v) {
  std::vector<std::byte> bytes(v.data.size() * ir::dtype_size(v.dtype));
  ir::visit_any(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.data.size(); ++i) {
      const T e = ir::store<T>(v.data[i]);
      std::memcpy(bytes.data() + i * sizeof(T), &e, sizeof(T));
    }
    return 0;
  });
  return bytes;
}

Value from_bytes(ir::DType dtype, const ir::Shape& shape, const std::vector<std::byte>& bytes) {
  Value v{dtype, shape, std::vector<double>(static_cast<size_t>(count(shape)))};
  ir::visit_any(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.data.size(); ++i) {
      T e;
      std::memcpy(&e, bytes.data() + i * sizeof(T), sizeof(T));
      v.data[i] = static_cast<double>(ir::load(e));
    }
    return 0;
  });
  return v;
}

Value f32(ir::Shape shape, std::vector<double> data) {
  for (double& v : data) v = static_cast<double>(static_cast<float>(v));
  return make(ir::DType::Float32, std::move(shape), std::move(data));
}

Value i32(ir::Shape shape, std::vector<double> data) {
  for (double v : data) {
    if (v != std::trunc(v) || v < INT32_MIN || v > INT32_MAX) {
      throw std::invalid_argument("i32: " + std::to_string(v) + " is not an int32");
    }
  }
  return make(ir::DType::Int32, std::move(shape), std::move(data));
}

Value f16(ir::Shape shape, std::vector<double> data) {
  for (double& v : data) v = static_cast<double>(ir::half_to_float(ir::float_to_half(static_cast<float>(v))));
  return make(ir::DType::Float16, std::move(shape), std::move(data));
}

Value typed(ir::DType dtype, ir::Shape shape, std::vector<double> data) {
  if (dtype == ir::DType::Float32) return f32(std::move(shape), std::move(data));
  if (dtype == ir::DType::Float16) return f16(std::move(shape), std::move(data));
  ir::visit_any(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (double v : data) {
      if (static_cast<double>(ir::load(ir::store<T>(v))) != v) {
        throw std::invalid_argument("typed: " + std::to_string(v) + " is not a " + std::string(ir::dtype_name(dtype)));
      }
    }
    return 0;
  });
  return make(dtype, std::move(shape), std::move(data));
}

Value u8(ir::Shape shape, std::vector<double> data) {
  for (double v : data) {
    if (v != std::trunc(v) || v < 0 || v > 255)
      throw std::invalid_argument("u8: " + std::to_string(v) + " is not a uint8");
  }
  return make(ir::DType::UInt8, std::move(shape), std::move(data));
}

std::vector<double> random_values(int64_t n, double lo, double hi, uint32_t seed, double min_abs) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  while (static_cast<int64_t>(out.size()) < n) {
    const double v = dist(gen);
    if (std::abs(v) >= min_abs) out.push_back(v);
  }
  return out;
}

Value random_f32(ir::Shape shape, uint32_t seed, double lo, double hi, double min_abs) {
  const int64_t n = count(shape);
  return f32(std::move(shape), random_values(n, lo, hi, seed, min_abs));
}

std::vector<ir::TensorId> add_inputs(ir::Graph& graph, const std::vector<Value>& inputs) {
  std::vector<ir::TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back(graph.add_variable("in" + std::to_string(i), inputs[i].dtype, inputs[i].shape, to_bytes(inputs[i])));
  }
  return ids;
}

std::vector<Value> evaluate(const ir::Graph& graph, const std::vector<ir::TensorId>& outputs) {
  ir::Graph g = graph;
  std::vector<ir::StreamId> streams;
  for (size_t i = 0; i < outputs.size(); ++i)
    streams.push_back(g.add_d2h_stream("out" + std::to_string(i), outputs[i]));
  session::SessionOptions options;
  options.threads_per_device = 1;  // the build machines' 2 cores are shared
  session::Session session(g, options);
  std::vector<std::vector<std::byte>> host(outputs.size());
  std::vector<runtime::HostArray> arrays;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::TensorInfo& t = g.tensor(outputs[i]);
    host[i].resize(t.bytes());
    arrays.push_back({streams[i], host[i].data(), t.dtype, t.shape});
  }
  session.run({}, arrays);
  std::vector<Value> values;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::TensorInfo& t = g.tensor(outputs[i]);
    values.push_back(from_bytes(t.dtype, t.shape, host[i]));
  }
  return values;
}

std::vector<Value> run_op(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs) {
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, inputs);
  return evaluate(g, g.add_op(type, ids, attrs));
}

Value run_op1(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs) {
  return run_op(type, inputs, attrs).front();
}

OpError op_error(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs) {
  ir::Graph g;
  std::vector<ir::TensorId> outputs;
  try {
    outputs = g.add_op(type, add_inputs(g, inputs), attrs);
  } catch (const ir::Error& e) {
    return {Stage::Build, e.code(), e.what()};
  }
  try {
    evaluate(g, outputs);
  } catch (const ir::Error& e) {
    return {Stage::Run, e.code(), e.what()};
  }
  ADD_FAILURE() << "op '" << type << "' raised no error";
  return {};
}

OpError expect_build_error(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs,
                           ir::ErrorCode code) {
  OpError e = op_error(type, inputs, attrs);
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, code);
  EXPECT_THAT(e.message, ::testing::HasSubstr("op '" + std::string(type) + "'"));
  return e;
}

void expect_close(const Value& actual, const Value& expected, Tolerance tol, const std::string& what) {
  std::ostringstream rule;
  rule << "|got - expected| <= " << tol.atol << " + " << tol.rtol << " * |expected|";
  compare(
      actual, expected, what,
      [tol](double a, double e) { return a == e || std::abs(a - e) <= tol.atol + tol.rtol * std::abs(e); }, rule.str());
}

void expect_equal(const Value& actual, const Value& expected, const std::string& what) {
  compare(
      actual, expected, what,
      [](double a, double e) {
        return (std::isnan(a) && std::isnan(e)) || (a == e && std::signbit(a) == std::signbit(e));
      },
      "exact, sign of zero included");
}

void expect_forward(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs,
                    const Reference& reference, Tolerance tol) {
  expect_close(run_op1(type, inputs, attrs), reference(inputs), tol, std::string(type) + " forward");
}

void expect_finite_differences(const std::vector<Value>& inputs, const LossAndGradients& f, double h, double tol) {
  const std::vector<Value> at = f(inputs);
  for (size_t which = 0; which < inputs.size(); ++which) {
    for (size_t i = 0; i < inputs[which].data.size(); ++i) {
      std::vector<Value> up = inputs, down = inputs;
      up[which].data[i] += h;
      down[which].data[i] -= h;
      const double fd = (f(up)[0].data[0] - f(down)[0].data[0]) / (2 * h);
      EXPECT_NEAR(at[1 + which].data[i], fd, tol) << "input " << which << " element " << i;
    }
  }
}

void expect_gradients(std::string_view type, const std::vector<Value>& inputs, const ir::Attributes& attrs,
                      const Reference& reference, const GradCheckOptions& options) {
  std::vector<size_t> wrt = options.wrt;
  if (wrt.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype == ir::DType::Float32) wrt.push_back(i);
    }
  }
  const Value expected = reference(inputs);
  ASSERT_EQ(expected.dtype, ir::DType::Float32) << "the gradient check needs a float32 output";

  // Plexus: loss = reduce_sum(y * R), R a constant, gradients by autodiff.
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, inputs);
  const std::vector<ir::TensorId> outs = g.add_op(type, ids, attrs);
  ASSERT_EQ(outs.size(), 1u);
  const ir::TensorId y = outs.front();
  const Value weights = random_f32(g.tensor(y).shape, options.seed);
  const ir::TensorId r = g.add_constant(ir::DType::Float32, weights.shape, to_bytes(weights));
  const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("mul", {y, r}, {}).front()}, {}).front();
  std::vector<ir::TensorId> wrt_ids;
  for (size_t i : wrt) wrt_ids.push_back(ids.at(i));
  std::vector<ir::TensorId> fetch{y};
  for (ir::TensorId grad : ir::autodiff(g, loss, wrt_ids)) fetch.push_back(grad);
  const std::vector<Value> got = evaluate(g, fetch);
  expect_close(got[0], expected, options.forward, std::string(type) + " forward");
  ASSERT_EQ(weights.shape, expected.shape) << "the reference's output shape differs from Plexus's";

  // Reference: the same loss in double, differentiated by central differences.
  auto loss_ref = [&](const std::vector<Value>& x) {
    const Value out = reference(x);
    double sum = 0.0;
    for (size_t j = 0; j < out.data.size(); ++j) sum += out.data[j] * weights.data[j];
    return sum;
  };
  std::vector<Value> x = inputs;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const size_t i = wrt[k];
    std::vector<size_t> elements(inputs[i].data.size());
    std::iota(elements.begin(), elements.end(), size_t{0});
    if (options.sample > 0 && options.sample < elements.size()) {
      std::mt19937 gen(options.seed + static_cast<uint32_t>(i));
      std::shuffle(elements.begin(), elements.end(), gen);
      elements.resize(options.sample);
      std::sort(elements.begin(), elements.end());
    }
    // Compared on the checked elements only: analytic and numeric agree elsewhere by fiat.
    Value numeric{ir::DType::Float32, {static_cast<int64_t>(elements.size())}, {}};
    Value analytic = numeric;
    for (size_t j : elements) {
      const double x0 = x[i].data[j];
      x[i].data[j] = x0 + options.eps;
      const double plus = loss_ref(x);
      x[i].data[j] = x0 - options.eps;
      const double minus = loss_ref(x);
      x[i].data[j] = x0;
      numeric.data.push_back((plus - minus) / (2.0 * options.eps));
      analytic.data.push_back(got[1 + k].data[j]);
    }
    if (elements.size() == inputs[i].data.size()) {
      numeric.shape = inputs[i].shape;
      analytic = got[1 + k];
    }
    expect_close(analytic, numeric, options.gradient,
                 std::string(type) + " gradient of input " + std::to_string(i) + " (analytic vs numeric" +
                     (elements.size() < inputs[i].data.size()
                          ? ", " + std::to_string(elements.size()) + " sampled elements)"
                          : ")"));
  }
}

ir::Shape broadcast_shape(const ir::Shape& a, const ir::Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  ir::Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a.size() < rank ? 1 : a[i + a.size() - rank];
    const int64_t db = i + b.size() < rank ? 1 : b[i + b.size() - rank];
    if (da != db && da != 1 && db != 1) throw std::invalid_argument("broadcast_shape: incompatible shapes");
    out[i] = std::max(da, db);
  }
  return out;
}

std::vector<double> broadcast_to(const Value& v, const ir::Shape& shape) {
  const size_t lead = shape.size() - v.shape.size();
  std::vector<double> out(static_cast<size_t>(count(shape)));
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < v.shape.size(); ++d) src = src * v.shape[d] + (v.shape[d] == 1 ? 0 : index[lead + d]);
    out[flat] = v.data[static_cast<size_t>(src)];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Value broadcast_binary(const Value& a, const Value& b, ir::DType dtype,
                       const std::function<double(double, double)>& f) {
  const ir::Shape shape = broadcast_shape(a.shape, b.shape);
  const std::vector<double> x = broadcast_to(a, shape), y = broadcast_to(b, shape);
  Value out{dtype, shape, std::vector<double>(x.size())};
  for (size_t i = 0; i < x.size(); ++i) out.data[i] = f(x[i], y[i]);
  return out;
}

Value map_unary(const Value& x, const std::function<double(double)>& f) {
  Value out = x;
  for (double& v : out.data) v = f(v);
  return out;
}

ir::Attributes make_attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> values) {
  ir::Attributes attrs;
  for (const auto& [name, value] : values) attrs.set(name, value);
  return attrs;
}

}  // namespace plexus::ops::test
