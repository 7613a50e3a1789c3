// Header-only C++17 wrapper over the Plexus C API (<plexus/plexus.h>), in the style of
// onnxruntime_cxx_api.h: move-only RAII handles, exceptions carrying the status and the
// message, typed helpers for every op. It uses nothing but the C API, so it works with any
// libplexus.so of PLX_API_VERSION or later, and covers all of it: Ir (plx_ir_*), InSequence
// and Block (scopes), ReplicaGrouping (plx_replica_grouping_*), Session (plx_session_*,
// checkpoints included), Run (plx_run_*: asynchronous runs and saves), Dataset and Loader,
// version(), status_name(), runtime_info(), workers_read_environment().
//
// Thread safety: as the C API (an Ir from one thread at a time; Session methods from any
// thread, runs one at a time; a Run from any thread).
#ifndef PLEXUS_PLEXUS_HPP
#define PLEXUS_PLEXUS_HPP

#include <plexus/plexus.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace plx {

/// A failed C API call: status() is the plx_status, what() the plx_last_error() message.
class Error : public std::runtime_error {
 public:
  Error(plx_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  plx_status status() const noexcept { return status_; }

 private:
  plx_status status_;
};

/// Throws Error unless `status` is PLX_OK.
inline void check(plx_status status) {
  if (status != PLX_OK) throw Error(status, std::string(plx_status_name(status)) + ": " + plx_last_error());
}

using Shape = std::vector<int64_t>;

/// PLX_API_VERSION of the library loaded at run time (plx_version); compare with the
/// header's PLX_API_VERSION. Never throws.
inline uint32_t version() noexcept { return plx_version(); }

/// The name of a status, e.g. "PLX_ERR_TIMEOUT" (plx_status_name). Never throws.
inline const char* status_name(plx_status status) noexcept { return plx_status_name(status); }

/// The plx_dtype of a C++ element type.
template <class T>
constexpr plx_dtype dtype_of();
template <>
constexpr plx_dtype dtype_of<float>() { return PLX_DTYPE_FLOAT32; }
template <>
constexpr plx_dtype dtype_of<int32_t>() { return PLX_DTYPE_INT32; }
template <>
constexpr plx_dtype dtype_of<uint8_t>() { return PLX_DTYPE_UINT8; }
template <>
constexpr plx_dtype dtype_of<int8_t>() { return PLX_DTYPE_INT8; }
template <>
constexpr plx_dtype dtype_of<uint32_t>() { return PLX_DTYPE_UINT32; }

inline int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

/// A checked replica grouping (plx_replica_grouping; seed 001, 13.2).
class ReplicaGrouping {
 public:
  /// group_size 0 means R / stride. Throws Error(PLX_ERR_INVALID_GROUPING) when invalid.
  ReplicaGrouping(int64_t replication_factor, int64_t group_size, int64_t stride = 1) {
    check(plx_replica_grouping_create(replication_factor, group_size, stride, &g_));
  }
  explicit ReplicaGrouping(const plx_replica_grouping& g) : g_(g) {}

  int64_t replication_factor() const { return g_.replication_factor; }
  int64_t group_size() const { return g_.group_size; }
  int64_t stride() const { return g_.stride; }
  int64_t num_groups() const {
    int64_t n = 0;
    check(plx_replica_grouping_get_num_groups(&g_, &n));
    return n;
  }
  std::vector<int64_t> members(int64_t group) const {
    std::vector<int64_t> m(static_cast<size_t>(g_.group_size));
    size_t count = 0;
    check(plx_replica_grouping_get_members(&g_, group, m.data(), m.size(), &count));
    m.resize(count);
    return m;
  }
  int64_t group_of(int64_t replica) const {
    int64_t group = 0;
    check(plx_replica_grouping_get_group(&g_, replica, &group));
    return group;
  }
  ReplicaGrouping transpose() const {
    plx_replica_grouping t{};
    check(plx_replica_grouping_transpose(&g_, &t));
    return ReplicaGrouping(t);
  }
  const plx_replica_grouping& c() const { return g_; }

 private:
  plx_replica_grouping g_{};
};

/// A tensor id of an Ir (plain value; the Ir owns the tensor).
struct Tensor {
  plx_tensor id = 0;
};

/// A stream id of an Ir.
struct Stream {
  plx_stream id = 0;
};

/// A remote buffer id of an Ir.
struct RemoteBuffer {
  plx_remote_buffer id = 0;
};

/// A graph id of an Ir (PopXL popxl.Graph): the main graph or a subgraph.
struct Graph {
  plx_graph id = 0;
};

/// One call of a subgraph (PopXL CallSiteInfo): the call site and the call's outputs.
struct CallInfo {
  plx_call_site site = 0;
  std::vector<Tensor> outputs;
};

/// One op attribute; converts to plx_attr while it is alive.
class Attr {
 public:
  Attr(std::string name, int64_t v) : name_(std::move(name)), value_(v) {}
  Attr(std::string name, int v) : name_(std::move(name)), value_(int64_t{v}) {}
  Attr(std::string name, bool v) : name_(std::move(name)), value_(int64_t{v}) {}
  Attr(std::string name, double v) : name_(std::move(name)), value_(v) {}
  Attr(std::string name, std::vector<int64_t> v) : name_(std::move(name)), value_(std::move(v)) {}
  Attr(std::string name, std::string v) : name_(std::move(name)), value_(std::move(v)) {}

  plx_attr c() const {
    if (auto* i = std::get_if<int64_t>(&value_)) return plx_attr_int(name_.c_str(), *i);
    if (auto* f = std::get_if<double>(&value_)) return plx_attr_float(name_.c_str(), *f);
    if (auto* v = std::get_if<std::vector<int64_t>>(&value_)) return plx_attr_ints(name_.c_str(), v->data(), v->size());
    return plx_attr_string(name_.c_str(), std::get<std::string>(value_).c_str());
  }

 private:
  std::string name_;
  std::variant<int64_t, double, std::vector<int64_t>, std::string> value_;
};

/// An IR under construction (plx_ir). Move-only.
class Ir {
 public:
  /// An IR whose program runs as `replication_factor` replicas.
  explicit Ir(int64_t replication_factor = 1) {
    check(plx_ir_create(&handle_));
    if (replication_factor != 1) {
      const plx_status status = plx_ir_set_replication_factor(handle_, replication_factor);
      if (status != PLX_OK) {
        Error error(status, std::string(plx_status_name(status)) + ": " + plx_last_error());
        plx_ir_destroy(handle_);
        throw error;
      }
    }
  }
  ~Ir() { plx_ir_destroy(handle_); }
  Ir(Ir&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Ir& operator=(Ir&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Ir(const Ir&) = delete;
  Ir& operator=(const Ir&) = delete;

  plx_ir* get() const { return handle_; }

  int64_t replication_factor() const {
    int64_t r = 1;
    check(plx_ir_get_replication_factor(handle_, &r));
    return r;
  }

  /// A variable with a replica grouping: `data` holds [num_groups] + shape values.
  template <class T>
  Tensor variable(const std::string& name, const Shape& shape, const std::vector<T>& data,
                  const ReplicaGrouping& grouping, plx_retrieval_mode retrieval = PLX_RETRIEVAL_ONE_PER_GROUP) {
    plx_variable_options options;
    plx_variable_options_init(&options);
    options.grouping = &grouping.c();
    options.retrieval_mode = retrieval;
    Tensor t;
    check(plx_ir_add_variable_with_options(handle_, name.c_str(), dtype_of<T>(), shape.data(), shape.size(),
                                           data.data(), data.size() * sizeof(T), &options, &t.id));
    return t;
  }

  /// A remote buffer: `entries` slots of `shape` per replica, in host memory.
  RemoteBuffer remote_buffer(plx_dtype dtype, const Shape& shape, int64_t entries = 1) {
    RemoteBuffer b;
    check(plx_ir_add_remote_buffer(handle_, dtype, shape.data(), shape.size(), entries, &b.id));
    return b;
  }

  /// A variable in slot `entry` of `buffer`; `data` holds [num_groups] + shape values.
  template <class T>
  Tensor remote_variable(const std::string& name, const Shape& shape, const std::vector<T>& data, RemoteBuffer buffer,
                         int64_t entry = 0, const ReplicaGrouping* grouping = nullptr,
                         plx_retrieval_mode retrieval = PLX_RETRIEVAL_ONE_PER_GROUP) {
    const plx_variable_options options = variable_options(grouping, retrieval, 0);
    Tensor t;
    check(plx_ir_add_remote_variable(handle_, name.c_str(), dtype_of<T>(), shape.data(), shape.size(), data.data(),
                                     data.size() * sizeof(T), buffer.id, entry, &options, &t.id));
    return t;
  }

  /// A replica-sharded variable of full shape `shape`; returns (variable, this replica's
  /// shard), which are the same tensor in Plexus.
  template <class T>
  std::pair<Tensor, Tensor> replica_sharded_variable(const std::string& name, const Shape& shape,
                                                     const std::vector<T>& data, const ReplicaGrouping* grouping = nullptr,
                                                     int64_t shard_over = 0,
                                                     plx_retrieval_mode retrieval = PLX_RETRIEVAL_ONE_PER_GROUP) {
    const plx_variable_options options = variable_options(grouping, retrieval, shard_over);
    std::pair<Tensor, Tensor> out;
    check(plx_ir_add_replica_sharded_variable(handle_, name.c_str(), dtype_of<T>(), shape.data(), shape.size(),
                                              data.data(), data.size() * sizeof(T), &options, &out.first.id,
                                              &out.second.id));
    return out;
  }

  /// A replica-sharded variable of full shape `shape` kept in slot `entry` of `buffer`,
  /// whose slots must have the shard's shape.
  template <class T>
  Tensor remote_replica_sharded_variable(const std::string& name, const Shape& shape, const std::vector<T>& data,
                                         RemoteBuffer buffer, int64_t entry = 0,
                                         const ReplicaGrouping* grouping = nullptr, int64_t shard_over = 0,
                                         plx_retrieval_mode retrieval = PLX_RETRIEVAL_ONE_PER_GROUP) {
    const plx_variable_options options = variable_options(grouping, retrieval, shard_over);
    Tensor t;
    check(plx_ir_add_remote_replica_sharded_variable(handle_, name.c_str(), dtype_of<T>(), shape.data(), shape.size(),
                                                     data.data(), data.size() * sizeof(T), buffer.id, entry, &options,
                                                     &t.id));
    return t;
  }

  /// remote_load: a copy of slot `index` (a constant, or an int32 scalar tensor).
  Tensor remote_load(RemoteBuffer buffer, int64_t index = 0) {
    return op1("remote_load", {}, {{"buffer", static_cast<int64_t>(buffer.id)}, {"index", index}});
  }
  Tensor remote_load(RemoteBuffer buffer, Tensor index) {
    return op1("remote_load", {index}, {{"buffer", static_cast<int64_t>(buffer.id)}});
  }
  /// remote_store: copies `t` into slot `index`.
  void remote_store(RemoteBuffer buffer, int64_t index, Tensor t) {
    op("remote_store", {t}, {{"buffer", static_cast<int64_t>(buffer.id)}, {"index", index}});
  }
  void remote_store(RemoteBuffer buffer, Tensor index, Tensor t) {
    op("remote_store", {t, index}, {{"buffer", static_cast<int64_t>(buffer.id)}});
  }

  /// A variable initialised from `data` (numel(shape) elements).
  template <class T>
  Tensor variable(const std::string& name, const Shape& shape, const std::vector<T>& data) {
    Tensor t;
    check(plx_ir_add_variable(handle_, name.c_str(), dtype_of<T>(), shape.data(), shape.size(), data.data(),
                              data.size() * sizeof(T), &t.id));
    return t;
  }

  template <class T>
  Tensor constant(const Shape& shape, const std::vector<T>& data) {
    Tensor t;
    check(plx_ir_add_constant(handle_, dtype_of<T>(), shape.data(), shape.size(), data.data(), data.size() * sizeof(T),
                              &t.id));
    return t;
  }

  /// A float32 scalar constant.
  Tensor scalar(float value) { return constant<float>({}, {value}); }

  /// A host-to-device stream and the tensor it fills each step.
  std::pair<Stream, Tensor> h2d_stream(const std::string& name, plx_dtype dtype, const Shape& shape) {
    std::pair<Stream, Tensor> out;
    check(plx_ir_add_h2d_stream(handle_, name.c_str(), dtype, shape.data(), shape.size(), &out.first.id,
                                &out.second.id));
    return out;
  }

  /// A device-to-host stream copying `t` each step.
  Stream d2h_stream(const std::string& name, Tensor t) {
    Stream s;
    check(plx_ir_add_d2h_stream(handle_, name.c_str(), t.id, &s.id));
    return s;
  }

  /// Any registered op by name; returns all outputs.
  std::vector<Tensor> op(const std::string& name, const std::vector<Tensor>& inputs,
                         const std::vector<Attr>& attrs = {}) {
    std::vector<plx_tensor> ins;
    for (const Tensor& t : inputs) ins.push_back(t.id);
    std::vector<plx_attr> cattrs;
    for (const Attr& a : attrs) cattrs.push_back(a.c());
    std::vector<plx_tensor> outs(8);
    size_t count = 0;
    plx_status status = plx_ir_add_op(handle_, name.c_str(), ins.data(), ins.size(), cattrs.data(), cattrs.size(),
                                      outs.data(), outs.size(), &count);
    if (status == PLX_ERR_INVALID_ARGUMENT && count > outs.size()) {  // more outputs (clip_scale_ of many tensors)
      outs.resize(count);
      status = plx_ir_add_op(handle_, name.c_str(), ins.data(), ins.size(), cattrs.data(), cattrs.size(), outs.data(),
                             outs.size(), &count);
    }
    check(status);
    std::vector<Tensor> result;
    for (size_t i = 0; i < count; ++i) result.push_back(Tensor{outs[i]});
    return result;
  }

  /// An op's first output.
  Tensor op1(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Attr>& attrs = {}) {
    return op(name, inputs, attrs).front();
  }

  // Typed helpers, one per op (docs/ops.md).
  Tensor matmul(Tensor a, Tensor b, bool transpose_a = false, bool transpose_b = false) {
    return op1("matmul", {a, b}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
  }
  Tensor add(Tensor a, Tensor b) { return op1("add", {a, b}); }
  /// x <- x + y in place (y broadcast to x); returns the updated x.
  Tensor add_(Tensor x, Tensor y) { return op1("add_", {x, y}); }
  Tensor sub(Tensor a, Tensor b) { return op1("sub", {a, b}); }
  Tensor mul(Tensor a, Tensor b) { return op1("mul", {a, b}); }
  Tensor div(Tensor a, Tensor b) { return op1("div", {a, b}); }
  Tensor equal(Tensor a, Tensor b) { return op1("equal", {a, b}); }
  Tensor neg(Tensor x) { return op1("neg", {x}); }
  Tensor relu(Tensor x) { return op1("relu", {x}); }
  Tensor gelu(Tensor x) { return op1("gelu", {x}); }
  Tensor reshape(Tensor x, const Shape& shape) { return op1("reshape", {x}, {{"shape", shape}}); }
  Tensor transpose(Tensor x, const Shape& perm = {}) { return op1("transpose", {x}, {{"perm", perm}}); }
  Tensor expand(Tensor x, const Shape& shape) { return op1("expand", {x}, {{"shape", shape}}); }
  Tensor reduce_sum(Tensor x, const Shape& axes = {}, bool keepdims = false) {
    return op1("reduce_sum", {x}, {{"axes", axes}, {"keepdims", keepdims}});
  }
  Tensor reduce_mean(Tensor x, const Shape& axes = {}, bool keepdims = false) {
    return op1("reduce_mean", {x}, {{"axes", axes}, {"keepdims", keepdims}});
  }
  Tensor argmax(Tensor x, int64_t axis = -1, bool keepdims = false) {
    return op1("argmax", {x}, {{"axis", axis}, {"keepdims", keepdims}});
  }
  Tensor cast(Tensor x, plx_dtype dtype) { return op1("cast", {x}, {{"dtype", int64_t{dtype}}}); }
  Tensor softmax_cross_entropy(Tensor logits, Tensor labels) { return op1("softmax_cross_entropy", {logits, labels}); }
  // Collectives within each group of `grouping` (default: all replicas); op is "sum",
  // "mean", "max" or "min" (reduce_scatter: "sum" or "mean").
  Tensor all_reduce(Tensor x, const std::string& op = "sum", const ReplicaGrouping* grouping = nullptr) {
    return op1("replicated_all_reduce", {x}, with_grouping({{"op", op}}, grouping));
  }
  /// In place; returns the reduced x.
  Tensor all_reduce_(Tensor x, const std::string& op = "sum", const ReplicaGrouping* grouping = nullptr) {
    return op1("replicated_all_reduce_", {x}, with_grouping({{"op", op}}, grouping));
  }
  /// output_shape "auto" / "new_axis" ([g] + shape) or "concat" (along axis 0).
  Tensor all_gather(Tensor x, const ReplicaGrouping* grouping = nullptr, const std::string& output_shape = "auto") {
    return op1("replicated_all_gather", {x}, with_grouping({{"output_shape", output_shape}}, grouping));
  }
  Tensor reduce_scatter(Tensor x, const std::string& op = "sum", const ReplicaGrouping* grouping = nullptr) {
    return op1("replicated_reduce_scatter", {x}, with_grouping({{"op", op}}, grouping));
  }
  Tensor replica_sharded_slice(Tensor x, const ReplicaGrouping* grouping = nullptr) {
    return op1("replica_sharded_slice", {x}, with_grouping({}, grouping));
  }

  /// x <- a*x + b*y in place; returns the updated x.
  Tensor scaled_add_(Tensor x, Tensor y, double a = 1.0, double b = 1.0) {
    return op1("scaled_add_", {x, y}, {{"a", a}, {"b", b}});
  }
  /// One PyTorch AdamW step: w, m, v and step (float32 [] or [1], the update count) are
  /// updated in place; returns the updated w.
  Tensor adamw_(Tensor w, Tensor grad, Tensor m, Tensor v, Tensor step, double lr = 1e-3, double beta1 = 0.9,
                double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0.01) {
    return op1("adamw_", {w, grad, m, v, step},
               {{"lr", lr}, {"beta1", beta1}, {"beta2", beta2}, {"eps", eps}, {"weight_decay", weight_decay}});
  }
  /// adamw_ with the learning rate from a float32 [] or [1] tensor `lr` (lr_schedule).
  Tensor adamw_(Tensor w, Tensor grad, Tensor m, Tensor v, Tensor step, Tensor lr, double beta1 = 0.9,
                double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0.01) {
    return op1("adamw_", {w, grad, m, v, step, lr},
               {{"beta1", beta1}, {"beta2", beta2}, {"eps", eps}, {"weight_decay", weight_decay}});
  }
  /// One PyTorch SGD step (momentum, dampening, weight decay, Nesterov): w, buf and step
  /// (float32 [] or [1]; buf is set to the gradient while step is 0) are updated in place;
  /// returns the updated w.
  Tensor sgd_momentum_(Tensor w, Tensor grad, Tensor buf, Tensor step, double lr = 0.01, double momentum = 0.9,
                       double dampening = 0.0, double weight_decay = 0.0, bool nesterov = false) {
    return op1("sgd_momentum_", {w, grad, buf, step},
               {{"lr", lr}, {"momentum", momentum}, {"dampening", dampening}, {"weight_decay", weight_decay},
                {"nesterov", nesterov}});
  }
  /// sgd_momentum_ with the learning rate from a float32 [] or [1] tensor `lr`.
  Tensor sgd_momentum_(Tensor w, Tensor grad, Tensor buf, Tensor step, Tensor lr, double momentum = 0.9,
                       double dampening = 0.0, double weight_decay = 0.0, bool nesterov = false) {
    return op1("sgd_momentum_", {w, grad, buf, step, lr},
               {{"momentum", momentum}, {"dampening", dampening}, {"weight_decay", weight_decay},
                {"nesterov", nesterov}});
  }
  /// Linear warm-up then cosine decay from the update count `step` (read before the
  /// optimizer increments it): a float32 [] learning rate.
  Tensor lr_schedule(Tensor step, int64_t warmup_steps, int64_t total_steps, double base_lr = 6e-4,
                     double min_lr = 6e-5) {
    return op1("lr_schedule", {step}, {{"warmup_steps", warmup_steps}, {"total_steps", total_steps},
                                       {"base_lr", base_lr}, {"min_lr", min_lr}});
  }
  /// The sum of the squares of every element of `grads`: a float32 [].
  Tensor global_sq_norm(const std::vector<Tensor>& grads) { return op1("global_sq_norm", grads); }
  /// Every gradient scaled in place by min(1, max_norm / (sqrt(total_sq_norm) + eps));
  /// returns the updated gradients.
  std::vector<Tensor> clip_scale_(std::vector<Tensor> grads, Tensor total_sq_norm, double max_norm = 1.0,
                                  double eps = 1e-6) {
    grads.push_back(total_sq_norm);
    return op("clip_scale_", grads, {{"max_norm", max_norm}, {"eps", eps}});
  }
  /// PyTorch's clip_grad_norm_: returns the norm before clipping, then the gradients,
  /// scaled in place.
  std::vector<Tensor> clip_by_global_norm_(const std::vector<Tensor>& grads, double max_norm = 1.0,
                                           double eps = 1e-6) {
    return op("clip_by_global_norm_", grads, {{"max_norm", max_norm}, {"eps", eps}});
  }

  /// conv2d: x [N,C,H,W], w [F,C,KH,KW], optional bias b [F] -> [N,F,OH,OW].
  Tensor conv2d(Tensor x, Tensor w, std::optional<Tensor> b = std::nullopt, const Shape& stride = {1, 1},
                const Shape& padding = {0, 0}) {
    std::vector<Tensor> inputs{x, w};
    if (b) inputs.push_back(*b);
    return op1("conv2d", inputs, {{"stride", stride}, {"padding", padding}});
  }
  /// max_pool2d: x [N,C,H,W]; an empty stride means stride = kernel.
  Tensor max_pool2d(Tensor x, const Shape& kernel, const Shape& stride = {}, const Shape& padding = {0, 0}) {
    return op1("max_pool2d", {x}, {{"kernel", kernel}, {"stride", stride}, {"padding", padding}});
  }
  /// flatten: [prod(dims < axis), prod(dims >= axis)], a view of x.
  Tensor flatten(Tensor x, int64_t axis = 1) { return op1("flatten", {x}, {{"axis", axis}}); }

  /// Gradients of `loss` with respect to each of `wrt`.
  std::vector<Tensor> autodiff(Tensor loss, const std::vector<Tensor>& wrt) {
    std::vector<plx_tensor> ids, grads(wrt.size());
    for (const Tensor& t : wrt) ids.push_back(t.id);
    check(plx_ir_autodiff(handle_, loss.id, ids.data(), ids.size(), grads.data()));
    std::vector<Tensor> out;
    for (plx_tensor g : grads) out.push_back(Tensor{g});
    return out;
  }

  /// The main graph (plx_ir_get_main_graph).
  Graph main_graph() const {
    Graph g;
    check(plx_ir_get_main_graph(handle_, &g.id));
    return g;
  }
  /// An empty subgraph (plx_ir_create_graph); add ops to it inside a GraphScope.
  Graph create_graph(const std::string& name) {
    Graph g;
    check(plx_ir_create_graph(handle_, name.c_str(), &g.id));
    return g;
  }
  /// Appends an input to subgraph `g` (plx_graph_add_input, PopXL popxl.graph_input).
  Tensor graph_input(Graph g, const std::string& name, plx_dtype dtype, const Shape& shape) {
    Tensor t;
    check(plx_graph_add_input(handle_, g.id, name.c_str(), dtype, shape.data(), shape.size(), &t.id));
    return t;
  }
  /// Appends `t` to the outputs of subgraph `g` (plx_graph_add_output, PopXL popxl.graph_output).
  void graph_output(Graph g, Tensor t) { check(plx_graph_add_output(handle_, g.id, t.id)); }
  /// The inputs (or, with `outputs`, the outputs) of subgraph `g`, in order.
  std::vector<Tensor> graph_tensors(Graph g, bool outputs = false) const {
    auto get = outputs ? plx_graph_get_outputs : plx_graph_get_inputs;
    size_t n = 0;
    const plx_status status = get(handle_, g.id, nullptr, 0, &n);
    if (status != PLX_ERR_BUFFER_TOO_SMALL) check(status);
    std::vector<plx_tensor> ids(n);
    check(get(handle_, g.id, ids.data(), ids.size(), &n));
    return to_tensors(ids);
  }
  /// Calls subgraph `g` from the current graph (plx_ir_call, PopXL ops.call_with_info);
  /// `modified` is empty or one flag per input (CallSiteInfo.set_parent_input_modified);
  /// `reuse_code`: one op running the callee's kernels, bound once per device
  /// (plx_call_options.reuse_code; no input may be modified).
  CallInfo call(Graph g, const std::vector<Tensor>& inputs, const std::vector<bool>& modified = {},
                bool reuse_code = false) {
    std::vector<plx_tensor> ins;
    for (const Tensor& t : inputs) ins.push_back(t.id);
    std::vector<uint8_t> flags(modified.begin(), modified.end());
    plx_call_options options;
    plx_call_options_init(&options);
    options.modified = flags.empty() ? nullptr : flags.data();
    options.reuse_code = reuse_code ? 1 : 0;
    std::vector<plx_tensor> outs(graph_tensors(g, true).size());
    CallInfo info;
    check(plx_ir_call(handle_, g.id, ins.data(), ins.size(), &options, outs.data(), outs.size(), nullptr, &info.site));
    info.outputs = to_tensors(outs);
    return info;
  }
  /// Repeats subgraph `g` `count` times (plx_ir_repeat, PopXL ops.repeat): the first inputs
  /// are loop-carried, one per output of `g`.
  std::vector<Tensor> repeat(Graph g, int64_t count, const std::vector<Tensor>& inputs) {
    std::vector<plx_tensor> ins;
    for (const Tensor& t : inputs) ins.push_back(t.id);
    std::vector<plx_tensor> outs(graph_tensors(g, true).size());
    check(plx_ir_repeat(handle_, g.id, count, ins.data(), ins.size(), outs.data(), outs.size(), nullptr));
    return to_tensors(outs);
  }
  /// Marks input `input` of `call` modified after the call
  /// (plx_call_site_set_input_modified, PopXL CallSiteInfo.set_parent_input_modified).
  void set_input_modified(const CallInfo& call, size_t input) {
    check(plx_call_site_set_input_modified(handle_, call.site, input));
  }
  /// The caller's tensor holding `graph_tensor`'s value at `call` (plx_call_site_get_parent).
  Tensor parent(const CallInfo& call, Tensor graph_tensor) const {
    Tensor t;
    check(plx_call_site_get_parent(handle_, call.site, graph_tensor.id, &t.id));
    return t;
  }
  /// The gradient graph of subgraph `g` (plx_graph_autodiff, PopXL transforms.autodiff);
  /// empty lists mean the defaults (every float32 output / input).
  Graph autodiff(Graph g, const std::vector<Tensor>& grads_provided = {},
                 const std::vector<Tensor>& grads_required = {}) {
    std::vector<plx_tensor> provided, required;
    for (const Tensor& t : grads_provided) provided.push_back(t.id);
    for (const Tensor& t : grads_required) required.push_back(t.id);
    plx_autodiff_options options;
    plx_autodiff_options_init(&options);
    options.grads_provided = provided.empty() ? nullptr : provided.data();
    options.num_grads_provided = provided.size();
    options.grads_required = required.empty() ? nullptr : required.data();
    options.num_grads_required = required.size();
    Graph grad;
    check(plx_graph_autodiff(handle_, g.id, &options, &grad.id));
    return grad;
  }
  /// The expected inputs (or, with `outputs`, outputs) of a gradient graph
  /// (plx_graph_get_expected_connections).
  std::vector<plx_expected_connection> expected_connections(Graph grad, bool outputs = false) const {
    size_t n = 0;
    const plx_status status = plx_graph_get_expected_connections(handle_, grad.id, outputs, nullptr, 0, &n, nullptr);
    if (status != PLX_ERR_BUFFER_TOO_SMALL) check(status);
    std::vector<plx_expected_connection> out(n);
    check(plx_graph_get_expected_connections(handle_, grad.id, outputs, out.data(), out.size(), &n, nullptr));
    return out;
  }
  /// The inputs of a call of gradient graph `grad` (PopXL GradGraphInfo.inputs_dict plus the
  /// provided gradients): each Fwd connection's parent at `forward_call`, and `provided`,
  /// in order, for the FwdGrad ones.
  std::vector<Tensor> grad_call_inputs(Graph grad, const CallInfo& forward_call, const std::vector<Tensor>& provided) const {
    std::vector<Tensor> out;
    size_t next = 0;
    for (const plx_expected_connection& c : expected_connections(grad)) {
      if (c.type == PLX_CONNECTION_FWD) {
        out.push_back(parent(forward_call, Tensor{c.fwd_tensor}));
      } else if (next < provided.size()) {
        out.push_back(provided[next++]);
      } else {
        throw Error(PLX_ERR_INVALID_ARGUMENT, "grad_call_inputs: fewer provided gradients than FwdGrad inputs");
      }
    }
    return out;
  }

  /// The element type of `t` (plx_ir_get_tensor_type).
  plx_dtype dtype(Tensor t) const {
    plx_dtype d = 0;
    check(plx_ir_get_tensor_type(handle_, t.id, &d, nullptr, 0, nullptr));
    return d;
  }

  /// The shape of `t` (plx_ir_get_tensor_type).
  Shape shape(Tensor t) const {
    Shape s(PLX_MAX_RANK);
    size_t rank = 0;
    check(plx_ir_get_tensor_type(handle_, t.id, nullptr, s.data(), s.size(), &rank));
    s.resize(rank);
    return s;
  }

  /// The name of `t` (plx_ir_get_tensor_name): "<graph>/<name>" for a graph input.
  std::string name(Tensor t) const {
    size_t size = 0;
    const plx_status status = plx_ir_get_tensor_name(handle_, t.id, nullptr, 0, &size);
    if (status != PLX_ERR_BUFFER_TOO_SMALL) check(status);
    std::string text(size, '\0');
    check(plx_ir_get_tensor_name(handle_, t.id, text.data(), text.size(), &size));
    text.resize(size - 1);
    return text;
  }

 private:
  static plx_variable_options variable_options(const ReplicaGrouping* grouping, plx_retrieval_mode retrieval,
                                               int64_t shard_over) {
    plx_variable_options options;
    plx_variable_options_init(&options);
    options.grouping = grouping ? &grouping->c() : nullptr;
    options.retrieval_mode = retrieval;
    options.shard_over = shard_over;
    return options;
  }

  static std::vector<Tensor> to_tensors(const std::vector<plx_tensor>& ids) {
    std::vector<Tensor> out;
    for (plx_tensor id : ids) out.push_back(Tensor{id});
    return out;
  }

  static std::vector<Attr> with_grouping(std::vector<Attr> attrs, const ReplicaGrouping* g) {
    if (g != nullptr) {
      attrs.emplace_back("group_size", g->group_size());
      attrs.emplace_back("stride", g->stride());
    }
    return attrs;
  }

  plx_ir* handle_ = nullptr;
};

/// An in_sequence scope (PopXL `with popxl.in_sequence():`): ops added while it lives run in
/// the order they were added.
class InSequence {
 public:
  explicit InSequence(Ir& ir) : ir_(ir) { check(plx_ir_begin_sequence(ir.get())); }
  ~InSequence() { plx_ir_end_sequence(ir_.get()); }
  InSequence(const InSequence&) = delete;
  InSequence& operator=(const InSequence&) = delete;

 private:
  Ir& ir_;
};

/// A block scope (PopTorch `with poptorch.Block("B1", ipu_id=...)`): ops added while it
/// lives belong to block `name` (plx_ir_begin_block).
class Block {
 public:
  Block(Ir& ir, const std::string& name, int64_t device = -1) : ir_(ir) {
    check(plx_ir_begin_block(ir.get(), name.c_str(), device));
  }
  ~Block() { plx_ir_end_block(ir_.get()); }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

 private:
  Ir& ir_;
};

/// A graph scope (PopXL `with graph:`): ops added while it lives go to `graph`
/// (plx_ir_begin_graph).
class GraphScope {
 public:
  GraphScope(Ir& ir, Graph graph) : ir_(ir) { check(plx_ir_begin_graph(ir.get(), graph.id)); }
  ~GraphScope() { plx_ir_end_graph(ir_.get()); }
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;

 private:
  Ir& ir_;
};

/// Session options with the library's defaults.
struct SessionOptions : plx_session_options {
  SessionOptions() : plx_session_options() { plx_session_options_init(this); }
};

/// Stages for plx_session_options (PopTorch poptorch.Stage("B1", "B2").ipu(0)): owns the
/// block names that the options point to, so it must outlive the session's creation.
class Stages {
 public:
  Stages& add(std::vector<std::string> blocks, int64_t device = -1) {
    names_.push_back(std::move(blocks));
    devices_.push_back(device);
    return *this;
  }
  /// Points `options` at these stages.
  void apply(plx_session_options& options) {
    pointers_.clear();
    stages_.clear();
    for (const auto& names : names_) {
      std::vector<const char*>& p = pointers_.emplace_back();
      for (const std::string& n : names) p.push_back(n.c_str());
    }
    for (size_t s = 0; s < names_.size(); ++s) stages_.push_back(plx_stage{pointers_[s].data(), pointers_[s].size(), devices_[s]});
    options.stages = stages_.data();
    options.num_stages = stages_.size();
  }

 private:
  std::vector<std::vector<std::string>> names_;
  std::vector<int64_t> devices_;
  std::vector<std::vector<const char*>> pointers_;
  std::vector<plx_stage> stages_;
};

/// Run options with no arrays and no callbacks (plx_run_options_init); point `inputs`,
/// `outputs` and `callbacks` at the caller's C arrays before Session::run_with.
struct RunOptions : plx_run_options {
  RunOptions() : plx_run_options() { plx_run_options_init(this); }
};

/// A caller's array for one stream (see plx_host_array); keeps its shape alive.
class HostArray {
 public:
  template <class T>
  HostArray(Stream stream, T* data, Shape shape) : stream_(stream), dtype_(dtype_of<T>()), data_(data), shape_(std::move(shape)) {}
  template <class T>
  HostArray(Stream stream, const T* data, Shape shape)
      : HostArray(stream, const_cast<T*>(data), std::move(shape)) {}

  plx_host_array c() const { return plx_host_array{stream_.id, dtype_, data_, shape_.data(), shape_.size()}; }

 private:
  Stream stream_;
  plx_dtype dtype_;
  void* data_;
  Shape shape_;
};

/// An asynchronous run or checkpoint save (plx_run), from Session::run_async or
/// Session::save_checkpoint_async. Move-only; destroying it waits for the operation
/// (plx_run_destroy). Thread safety: wait() from any thread; not moved or destroyed while
/// another thread waits on it.
class Run {
 public:
  Run(plx_run* handle, plx_session* session) noexcept : handle_(handle), session_(session) {}
  ~Run() { plx_run_destroy(handle_); }
  Run(Run&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), session_(std::exchange(other.session_, nullptr)) {}
  Run& operator=(Run&& other) noexcept {
    std::swap(handle_, other.handle_);
    std::swap(session_, other.session_);
    return *this;
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  /// Waits at most `timeout` (plx_run_wait): true once the operation has ended well, false
  /// while it still goes on (PLX_ERR_STILL_RUNNING); throws Error with the operation's status
  /// when it failed (PLX_ERR_CANCELLED after cancel(), PLX_ERR_TIMEOUT when a collective
  /// timed out).
  bool wait(std::chrono::milliseconds timeout) {
    const plx_status status = plx_run_wait(handle_, static_cast<int64_t>(timeout.count()));
    if (status == PLX_ERR_STILL_RUNNING) return false;
    check(status);
    return true;
  }
  /// Waits without a limit; throws Error with the operation's status when it failed.
  void wait() { check(plx_run_wait(handle_, -1)); }
  /// Cancels this run only (plx_run_cancel): wait() then throws Error(PLX_ERR_CANCELLED);
  /// the session's other runs go on. A checkpoint save is not cancelled.
  void cancel() { check(plx_run_cancel(handle_)); }
  plx_run* get() const { return handle_; }

 private:
  plx_run* handle_ = nullptr;
  plx_session* session_ = nullptr;
};

/// A compiled session (plx_session). Move-only.
class Session {
 public:
  explicit Session(const Ir& ir, const plx_session_options& options = SessionOptions()) {
    check(plx_session_create(ir.get(), &options, &handle_));
  }
  ~Session() { plx_session_destroy(handle_); }
  Session(Session&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Session& operator=(Session&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  plx_session* get() const { return handle_; }

  void run(const std::vector<HostArray>& inputs, const std::vector<HostArray>& outputs = {}) {
    std::vector<plx_host_array> ins, outs;
    for (const HostArray& a : inputs) ins.push_back(a.c());
    for (const HostArray& a : outputs) outs.push_back(a.c());
    check(plx_session_run(handle_, ins.data(), ins.size(), outs.data(), outs.size()));
  }

  /// Runs with arrays and/or stream callbacks (plx_session_run_with): blocks until the run
  /// ends; throws Error with the run's status (PLX_ERR_CANCELLED after cancel()).
  void run_with(const plx_run_options& options) { check(plx_session_run_with(handle_, &options)); }

  /// Starts a run and returns at once (plx_session_run_async); `options` and the arrays it
  /// points to must stay valid until the run ends. Throws Error for bad arrays or callbacks
  /// (nothing starts then).
  Run run_async(const plx_run_options& options) {
    plx_run* run = nullptr;
    check(plx_session_run_async(handle_, &options, &run));
    return Run(run, handle_);
  }

  /// Cancels the running and queued runs (plx_session_cancel); callable from any thread.
  void cancel() { check(plx_session_cancel(handle_)); }

  /// Streaming figures of the last finished run (plx_session_get_stream_stats).
  plx_stream_stats stream_stats() const {
    plx_stream_stats stats{};
    stats.struct_size = sizeof stats;
    check(plx_session_get_stream_stats(handle_, &stats));
    return stats;
  }

  Shape host_shape(Stream s) const {
    Shape shape(PLX_MAX_RANK + 2);
    size_t rank = 0;
    check(plx_session_get_host_shape(handle_, s.id, shape.data(), shape.size(), &rank));
    shape.resize(rank);
    return shape;
  }

  /// Shape a variable is read and written in (its retrieval mode's).
  Shape variable_shape(Tensor variable) const {
    Shape shape(PLX_MAX_RANK + 1);
    size_t rank = 0;
    check(plx_session_get_variable_shape(handle_, variable.id, shape.data(), shape.size(), &rank));
    shape.resize(rank);
    return shape;
  }

  /// A variable's value, numel(variable_shape(variable)) elements of T.
  template <class T>
  std::vector<T> read(Tensor variable) const {
    std::vector<T> out(static_cast<size_t>(numel(variable_shape(variable))));
    check(plx_session_read_variable(handle_, variable.id, out.data(), out.size() * sizeof(T)));
    return out;
  }

  template <class T>
  void write(Tensor variable, const std::vector<T>& data) {
    check(plx_session_write_variable(handle_, variable.id, data.data(), data.size() * sizeof(T)));
  }

  size_t num_devices() const {
    size_t n = 0;
    check(plx_session_get_num_devices(handle_, &n));
    return n;
  }

  /// Where each replica keeps `variable` (device or remote bytes, shard count).
  plx_variable_storage variable_storage(Tensor variable) const {
    plx_variable_storage s{};
    s.struct_size = sizeof s;
    check(plx_session_get_variable_storage(handle_, variable.id, &s));
    return s;
  }

  plx_memory_stats memory_stats(size_t device) const {
    plx_memory_stats stats{};
    stats.struct_size = sizeof stats;
    check(plx_session_get_memory_stats(handle_, device, &stats));
    return stats;
  }

  /// Saves a checkpoint (plx_session_save_checkpoint) with the caller's `counters`
  /// (epoch, data loader position, ...). `options`: level, threads, shuffle.
  void save_checkpoint(const std::string& path, const std::map<std::string, int64_t>& counters = {},
                       plx_checkpoint_options options = checkpoint_defaults()) {
    CounterArrays c(counters);
    c.point(options);
    check(plx_session_save_checkpoint(handle_, path.c_str(), &options));
  }

  /// Starts saving a checkpoint (plx_session_save_checkpoint_async): returns once the state
  /// is copied to host memory; Run::wait() gives the save's outcome. `counters` are copied.
  Run save_checkpoint_async(const std::string& path, const std::map<std::string, int64_t>& counters = {},
                            plx_checkpoint_options options = checkpoint_defaults()) {
    CounterArrays c(counters);
    c.point(options);
    plx_run* save = nullptr;
    check(plx_session_save_checkpoint_async(handle_, path.c_str(), &options, &save));
    return Run(save, handle_);
  }

  /// Loads a checkpoint (plx_session_load_checkpoint) and returns the counters named in
  /// `counter_names` (Error PLX_ERR_NOT_FOUND when the file lacks one; nothing is loaded then).
  std::map<std::string, int64_t> load_checkpoint(const std::string& path, const std::vector<std::string>& counter_names = {},
                                                 plx_checkpoint_options options = checkpoint_defaults()) {
    std::map<std::string, int64_t> wanted;
    for (const std::string& n : counter_names) wanted[n] = 0;
    CounterArrays c(wanted);
    c.point(options);
    check(plx_session_load_checkpoint(handle_, path.c_str(), &options));
    return c.values();
  }

  /// Steps completed, device_iterations per run (plx_session_get_step).
  int64_t step() const {
    int64_t n = 0;
    check(plx_session_get_step(handle_, &n));
    return n;
  }

  /// R, the workers, and the replicas this worker hosts (plx_session_get_replicas).
  plx_replica_info replicas() const {
    plx_replica_info info{};
    info.struct_size = sizeof info;
    check(plx_session_get_replicas(handle_, &info));
    return info;
  }

  static plx_checkpoint_options checkpoint_defaults() {
    plx_checkpoint_options o;
    plx_checkpoint_options_init(&o);
    return o;
  }

  /// JSON report of the compiled session (plx_session_get_report).
  std::string report() const { return text(plx_session_get_report); }
  /// The last run's Chrome Trace Event JSON (plx_session_get_trace; needs options.profile).
  std::string trace() const { return text(plx_session_get_trace); }
  /// The memory report of the compiled session as JSON text, schema "plexus.memory_report"
  /// (plx_session_get_memory_report; docs/profiling.md). Throws plx::Error on failure.
  std::string memory_report() const { return text(plx_session_get_memory_report); }

 private:
  std::string text(plx_status (*get)(const plx_session*, char*, size_t, size_t*)) const {
    size_t size = 0;
    if (const plx_status first = get(handle_, nullptr, 0, &size); first != PLX_ERR_BUFFER_TOO_SMALL) check(first);
    std::string out(size, '\0');
    check(get(handle_, out.data(), out.size(), &size));
    out.resize(size - 1);
    return out;
  }

  // Counters as the parallel arrays of plx_checkpoint_options.
  class CounterArrays {
   public:
    explicit CounterArrays(const std::map<std::string, int64_t>& counters) {
      for (const auto& [name, value] : counters) {
        names_.push_back(name);
        values_.push_back(value);
      }
      for (const std::string& n : names_) pointers_.push_back(n.c_str());
    }
    void point(plx_checkpoint_options& o) {
      o.num_counters = names_.size();
      o.counter_names = pointers_.data();
      o.counter_values = values_.data();
    }
    std::map<std::string, int64_t> values() const {
      std::map<std::string, int64_t> out;
      for (size_t i = 0; i < names_.size(); ++i) out[names_[i]] = values_[i];
      return out;
    }

   private:
    std::vector<std::string> names_;
    std::vector<const char*> pointers_;
    std::vector<int64_t> values_;
  };

  plx_session* handle_ = nullptr;
};

/// plx_runtime_get_info() as a string.
inline std::string runtime_info() {
  size_t size = 0;
  plx_runtime_get_info(nullptr, 0, &size);
  std::string text(size, '\0');
  check(plx_runtime_get_info(text.data(), text.size(), &size));
  text.resize(size - 1);
  return text;
}

/// This process's worker as its launcher tells it (plx_workers_read_environment).
struct WorkerPlace {
  int64_t count = 1;
  int64_t index = 0;
};
inline WorkerPlace workers_read_environment() {
  WorkerPlace place;
  check(plx_workers_read_environment(&place.count, &place.index));
  return place;
}
/// Deprecated (until 1.0): the old name of workers_read_environment().
inline WorkerPlace workers_from_environment() { return workers_read_environment(); }

/// An IDX images + labels pair (plx_dataset). Move-only.
class Dataset {
 public:
  Dataset(const std::string& images_path, const std::string& labels_path) {
    check(plx_dataset_load_idx(images_path.c_str(), labels_path.c_str(), &handle_));
  }
  ~Dataset() { plx_dataset_destroy(handle_); }
  Dataset(Dataset&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Dataset& operator=(Dataset&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  int64_t size() const {
    int64_t n = 0;
    check(plx_dataset_get_info(handle_, &n, nullptr, nullptr, 0, nullptr));
    return n;
  }
  Shape image_shape() const {
    Shape s(PLX_MAX_RANK);
    size_t rank = 0;
    check(plx_dataset_get_info(handle_, nullptr, nullptr, s.data(), s.size(), &rank));
    s.resize(rank);
    return s;
  }
  plx_dtype image_dtype() const {
    plx_dtype t = 0;
    check(plx_dataset_get_info(handle_, nullptr, &t, nullptr, 0, nullptr));
    return t;
  }
  const void* images() const {
    const void* p = nullptr;
    check(plx_dataset_get_data(handle_, &p, nullptr, nullptr));
    return p;
  }
  const void* labels() const {
    const void* p = nullptr;
    check(plx_dataset_get_data(handle_, nullptr, &p, nullptr));
    return p;
  }
  plx_dtype label_dtype() const {
    plx_dtype t = 0;
    check(plx_dataset_get_data(handle_, nullptr, nullptr, &t));
    return t;
  }
  const plx_dataset* get() const { return handle_; }

 private:
  plx_dataset* handle_ = nullptr;
};

/// A text corpus split into training and validation bytes (plx_text; the Debian package
/// `fortunes` at PLX_FORTUNES_DIR by default). Read-only once loaded: safe from any thread.
class Text {
 public:
  /// Reads `path` (a file or a directory of strfile-format files) and puts every
  /// `validation_every`-th document in the validation split. Throws Error: NOT_FOUND for a
  /// missing path, IO, INVALID_ARGUMENT for too few documents (plx_text_load).
  explicit Text(const std::string& path = PLX_FORTUNES_DIR, int64_t validation_every = 10) {
    check(plx_text_load(path.c_str(), validation_every, &handle_));
  }
  ~Text() { plx_text_destroy(handle_); }
  Text(Text&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Text& operator=(Text&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Text(const Text&) = delete;
  Text& operator=(const Text&) = delete;

  /// The bytes of `split`, valid while this Text lives.
  std::string_view bytes(plx_text_split split) const {
    const char* p = nullptr;
    size_t n = 0;
    check(plx_text_get_split(handle_, split, &p, &n, nullptr));
    return {p, n};
  }
  /// Documents in both splits.
  int64_t documents() const {
    int64_t n = 0;
    check(plx_text_get_split(handle_, PLX_TEXT_TRAIN, nullptr, nullptr, &n));
    return n;
  }
  const plx_text* get() const { return handle_; }

 private:
  plx_text* handle_ = nullptr;
};

/// A data loader (plx_loader; seed 003's poptorch.DataLoader) over a Dataset (shuffled,
/// normalised float32 images and int32 labels) or over windows of a Text (int32 tokens
/// and next-token targets [batch, context]), served to a session's streams by fill
/// callbacks, prepared ahead by worker threads. The Dataset or Text must outlive it.
/// Thread safety: as plx_loader (the callbacks from any thread; the methods from one).
class Loader {
 public:
  /// Throws Error(PLX_ERR_INVALID_ARGUMENT) naming an option out of range.
  Loader(const Dataset& dataset, const plx_loader_options& options) {
    check(plx_loader_create(dataset.get(), &options, &handle_));
  }
  /// Windows of context + 1 bytes of `split` (plx_loader_create_text). Throws
  /// Error(PLX_ERR_INVALID_ARGUMENT) for a context < 1, a split shorter than one window,
  /// an option out of range.
  Loader(const Text& text, plx_text_split split, int64_t context, const plx_loader_options& options) {
    check(plx_loader_create_text(text.get(), split, context, &options, &handle_));
  }
  ~Loader() { plx_loader_destroy(handle_); }
  Loader(Loader&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Loader& operator=(Loader&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Default options (plx_loader_options_init).
  static plx_loader_options default_options() {
    plx_loader_options o;
    plx_loader_options_init(&o);
    return o;
  }

  int64_t runs_per_epoch() const {
    int64_t runs = 0;
    check(plx_loader_get_runs_per_epoch(handle_, &runs));
    return runs;
  }
  /// Serves run `run` of epoch `epoch` next (call before each session run).
  void begin_run(int64_t epoch, int64_t run) { check(plx_loader_begin_run(handle_, epoch, run)); }
  /// The fill callbacks of the `images` and `labels` streams, for plx_run_options.callbacks;
  /// valid while this loader lives.
  std::array<plx_stream_callback, 2> callbacks(plx_stream images, plx_stream labels) const {
    std::array<plx_stream_callback, 2> out{};
    check(plx_loader_get_callbacks(handle_, images, labels, out.data()));
    return out;
  }
  plx_loader* get() const { return handle_; }

 private:
  plx_loader* handle_ = nullptr;
};

}  // namespace plx

#endif  // PLEXUS_PLEXUS_HPP
