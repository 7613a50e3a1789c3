// libFuzzer target over the C API's decoding of session options and op attributes. Build
// and run: see this folder's CMakeLists.txt; scripts/test.sh runs it for PLEXUS_FUZZ_SECONDS.
// The input's format is fuzz_input.h's; its first byte picks one of:
//
// Session options: the input fills a plx_session_options the way a C caller might (any
// struct_size, values and strings, stages with NULL arrays and names), and
// abi::to_session_options reads it. It may refuse it only with ir::Error; what it reads
// must be the caller's value for every field its struct_size covers and the default for the
// others. session::check_session_options, resolve_workers and hosted_by_worker then check
// and place the options, refusing only with ir::Error, and the hosted replicas of accepted
// options must be this worker's share of the replication factor.
//
// Op attributes: plx_ir_add_op is called on a fresh IR with an op registered here (one
// takes every kind of attribute, required or defaulted; one takes none; one defaults all)
// or a name from the input, inputs of this IR, of another one or any id, attributes of any
// name, kind and value (the name "buffer" decodes its int as a remote buffer id: here the
// value is XORed with the IR's buffer, so 0 names it) and any output capacity. A refusal
// must be a status other than PLX_ERR_INTERNAL with a message that leaves the IR as it
// was; an accepted op must have every attribute its spec declares, of its kind (the ops'
// shape inference reads them all: a getter's Internal error would be the status), and
// outputs whose ids the IR knows.
//
// Anything else escaping, a crash, a sanitizer report or a leak is a bug.
#include <plexus/plexus.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <string>
#include <vector>

#include "abi/src/handles.h"
#include "abi/src/session_options_api.h"
#include "abi/src/struct_size.h"
#include "core/ir/op_schema.h"
#include "core/session/session_options.h"
#include "fuzz_input.h"

namespace {

namespace ir = plexus::ir;
namespace runtime = plexus::runtime;
namespace session = plexus::session;
using plexus::test::FuzzInputReader;
using plexus::test::kNullArray;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "c_api_decode_fuzzer: %s\n", what.c_str());
  std::abort();
}

void expect_refusal(const ir::Error& e) {
  if (e.code() == ir::ErrorCode::Internal || std::string(e.what()).empty()) {
    bug(std::string("refused with code ") + std::to_string(static_cast<int>(e.code())) + ": '" + e.what() + "'");
  }
}

// ---- Session options -------------------------------------------------------------------

// What a C caller passes: the struct and the arrays its pointers point to.
struct CallerOptions {
  plx_session_options options{};
  std::vector<plx_stage> stages;
  std::deque<std::vector<const char*>> blocks;  // a deque: the stages' pointers stay valid
};

void read_stage(FuzzInputReader& in, CallerOptions& c) {
  plx_stage stage{};
  const uint8_t num_blocks = in.count(8);
  if (num_blocks == kNullArray) {
    stage.num_blocks = 1;
  } else {
    std::vector<const char*>& names = c.blocks.emplace_back();
    for (uint8_t b = 0; b < num_blocks; ++b) names.push_back(in.string());
    stage.blocks = names.data();
    stage.num_blocks = num_blocks;
  }
  stage.device = in.get<int64_t>();
  c.stages.push_back(stage);
}

void read_stages(FuzzInputReader& in, CallerOptions& c) {
  const uint8_t num_stages = in.count(8);
  if (num_stages == kNullArray) {
    c.options.num_stages = 1;  // and stages NULL
    return;
  }
  for (uint8_t s = 0; s < num_stages; ++s) read_stage(in, c);
  c.options.stages = c.stages.data();
  c.options.num_stages = num_stages;
}

void read_caller_options(FuzzInputReader& in, CallerOptions& c) {
  plx_session_options& o = c.options;
  o.struct_size = in.get<uint64_t>();
  o.device_iterations = in.get<int64_t>();
  o.device_memory_bytes = in.get<uint64_t>();
  o.threads_per_device = in.get<int32_t>();
  o.collectives_plugin = in.string();
  o.collective_timeout_ms = in.get<int64_t>();
  o.gradient_accumulation = in.get<int64_t>();
  read_stages(in, c);
  o.execution_strategy = in.string();
  o.strategy_options = in.string();
  o.output_mode = in.get<int32_t>();
  o.output_return_period = in.get<int64_t>();
  o.offload_optimizer_state = in.get<int32_t>();
  o.profile = in.get<int32_t>();
  o.prefetch_depth = in.get<int64_t>();
  o.io_threads = in.get<int32_t>();
  o.num_workers = in.get<int64_t>();
  o.worker_index = in.get<int64_t>();
  o.weight_update_on_host = in.get<int32_t>();
  o.gradient_bucket_bytes = in.get<size_t>();
}

// Whether the caller's struct_size covers `field`.
template <class F>
bool covers(const plx_session_options& caller, F plx_session_options::*field) {
  return std::min(caller.struct_size, sizeof(plx_session_options)) >= plexus::abi::end_of(field);
}

void expect_read(bool covered, int64_t caller, int64_t fallback, int64_t read, const char* field) {
  if (read != (covered ? caller : fallback)) {
    bug(std::string("options->") + field + " was read as " + std::to_string(read) + " (caller's " +
        std::to_string(caller) + ", default " + std::to_string(fallback) + ", " + (covered ? "" : "not ") +
        "covered by struct_size)");
  }
}

void expect_read(bool covered, const char* caller, const std::string& read, const char* field) {
  const std::string want = covered && caller != nullptr ? caller : "";
  if (read != want) bug(std::string("options->") + field + " was read as '" + read + "', not '" + want + "'");
}

// Every field read is the caller's when its struct_size covers it, else the default.
#define PLEXUS_EXPECT_READ(field) \
  expect_read(covers(c, &plx_session_options::field), c.field, d.field, r.field, #field)
#define PLEXUS_EXPECT_READ_FLAG(field) \
  expect_read(covers(c, &plx_session_options::field), c.field != 0, d.field, r.field, #field)

void check_read(const plx_session_options& c, const session::SessionOptions& r) {
  const session::SessionOptions d;
  PLEXUS_EXPECT_READ(device_iterations);
  expect_read(covers(c, &plx_session_options::device_memory_bytes), static_cast<int64_t>(c.device_memory_bytes),
              static_cast<int64_t>(d.device_memory_bytes), static_cast<int64_t>(r.device_memory_bytes),
              "device_memory_bytes");
  PLEXUS_EXPECT_READ(threads_per_device);
  expect_read(covers(c, &plx_session_options::collectives_plugin), c.collectives_plugin, r.collectives_plugin,
              "collectives_plugin");
  PLEXUS_EXPECT_READ(collective_timeout_ms);
  PLEXUS_EXPECT_READ(gradient_accumulation);
  expect_read(covers(c, &plx_session_options::num_stages), static_cast<int64_t>(c.num_stages), 0,
              static_cast<int64_t>(r.stages.size()), "num_stages");
  expect_read(covers(c, &plx_session_options::execution_strategy), c.execution_strategy, r.execution_strategy,
              "execution_strategy");
  expect_read(covers(c, &plx_session_options::strategy_options), c.strategy_options, r.strategy_options,
              "strategy_options");
  expect_read(covers(c, &plx_session_options::output_mode), c.output_mode, static_cast<int32_t>(d.output_mode),
              static_cast<int32_t>(r.output_mode), "output_mode");
  PLEXUS_EXPECT_READ(output_return_period);
  PLEXUS_EXPECT_READ_FLAG(offload_optimizer_state);
  PLEXUS_EXPECT_READ_FLAG(profile);
  PLEXUS_EXPECT_READ(prefetch_depth);
  PLEXUS_EXPECT_READ(io_threads);
  PLEXUS_EXPECT_READ(num_workers);
  PLEXUS_EXPECT_READ(worker_index);
  PLEXUS_EXPECT_READ_FLAG(weight_update_on_host);
  PLEXUS_EXPECT_READ(gradient_bucket_bytes);
}

#undef PLEXUS_EXPECT_READ
#undef PLEXUS_EXPECT_READ_FLAG

// Accepted options (workers resolved) host an equal share of the replicas, or are refused.
void check_hosted(const session::SessionOptions& o, int64_t replication_factor) {
  if (o.num_workers < 1 || o.worker_index < 0 || o.worker_index >= o.num_workers) {
    bug("accepted options are worker " + std::to_string(o.worker_index) + " of " + std::to_string(o.num_workers));
  }
  const runtime::HostedReplicas h = session::hosted_by_worker(o, replication_factor);
  if (h.count * o.num_workers != replication_factor || h.first < 0 || h.first + h.count > replication_factor) {
    bug("worker " + std::to_string(o.worker_index) + " of " + std::to_string(o.num_workers) + " hosts replicas [" +
        std::to_string(h.first) + ", +" + std::to_string(h.count) + ") of " + std::to_string(replication_factor));
  }
}

void fuzz_session_options(FuzzInputReader& in) {
  CallerOptions caller;
  read_caller_options(in, caller);
  const int64_t replication_factor = 1 + in.get<uint16_t>();
  session::SessionOptions options;
  try {
    options = plexus::abi::to_session_options(&caller.options);
  } catch (const ir::Error& e) {
    expect_refusal(e);
    return;
  }
  check_read(caller.options, options);
  try {
    session::check_session_options(options);
    check_hosted(session::resolve_workers(options), replication_factor);
  } catch (const ir::Error& e) {
    expect_refusal(e);
  }
}

// ---- Op attributes ---------------------------------------------------------------------

constexpr size_t kMaxOutputs = 4;
const char* const kFuzzOps[] = {"fuzz_every_kind", "fuzz_no_attributes", "fuzz_all_defaulted"};

void read_attribute(const ir::Attributes& attrs, const ir::AttrSpec& spec) {
  switch (spec.kind) {
    case ir::AttrKind::Int:
      (void)attrs.get_int(spec.name);
      break;
    case ir::AttrKind::Float:
      (void)attrs.get_float(spec.name);
      break;
    case ir::AttrKind::Ints:
      (void)attrs.get_ints(spec.name);
      break;
    case ir::AttrKind::String:
      (void)attrs.get_string(spec.name);
      break;
  }
}

// Reads every declared attribute with its getter; "count" (default 1) float32 [1] outputs.
ir::InferResult infer_reading_every_attribute(const ir::InferContext& ctx) {
  for (const ir::AttrSpec& spec : ir::OpSchemaRegistry::instance().find(ctx.op_name)->attrs) read_attribute(ctx.attrs, spec);
  const int64_t count = ctx.attrs.has("count") ? ctx.attrs.get_int("count") : 1;
  if (count < 0 || count > static_cast<int64_t>(kMaxOutputs)) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "count must be in 0.." + std::to_string(kMaxOutputs));
  }
  return {std::vector<ir::TensorType>(static_cast<size_t>(count), {ir::DType::Float32, {1}})};
}

ir::OpSchema fuzz_op(const char* name, std::vector<ir::AttrSpec> attrs) {
  ir::OpSchema def;
  def.name = name;
  def.min_inputs = 0;
  def.max_inputs = 3;
  def.attrs = std::move(attrs);
  def.infer = infer_reading_every_attribute;
  return def;
}

void register_fuzz_ops() {
  using ir::AttrKind;
  ir::OpSchemaRegistry& registry = ir::OpSchemaRegistry::instance();
  registry.add(fuzz_op(kFuzzOps[0], {{"count", AttrKind::Int, std::nullopt},
                                     {"scale", AttrKind::Float, 0.5},
                                     {"dims", AttrKind::Ints, std::vector<int64_t>{1, 2}},
                                     {"mode", AttrKind::String, std::nullopt},
                                     {"buffer", AttrKind::Int, int64_t{0}}}));
  registry.add(fuzz_op(kFuzzOps[1], {}));
  registry.add(fuzz_op(kFuzzOps[2], {{"count", AttrKind::Int, int64_t{2}},
                                     {"scale", AttrKind::Float, 1.0},
                                     {"dims", AttrKind::Ints, std::vector<int64_t>{}},
                                     {"mode", AttrKind::String, std::string("sum")}}));
}

// A fresh IR (a float32 variable [2,3], an int32 constant [4], a remote buffer) and
// another one whose tensor it must refuse.
struct FuzzIrs {
  FuzzIrs() {
    const int64_t shape[] = {2, 3};
    const float values[6] = {};
    const int32_t ints[4] = {};
    const int64_t ints_shape[] = {4};
    if (plx_ir_create(&ir) != PLX_OK || plx_ir_create(&other) != PLX_OK ||
        plx_ir_add_variable(ir, "v", PLX_DTYPE_FLOAT32, shape, 2, values, sizeof values, &tensors[0]) != PLX_OK ||
        plx_ir_add_constant(ir, PLX_DTYPE_INT32, ints_shape, 1, ints, sizeof ints, &tensors[1]) != PLX_OK ||
        plx_ir_add_variable(other, "w", PLX_DTYPE_FLOAT32, shape, 2, values, sizeof values, &tensors[2]) != PLX_OK) {
      bug(std::string("setting up the IRs failed: ") + plx_last_error());
    }
    buffer = plexus::abi::encode_remote_buffer(ir->graph, ir->graph.add_remote_buffer(ir::DType::Float32, {2, 3}, 4));
  }
  ~FuzzIrs() {
    plx_ir_destroy(ir);
    plx_ir_destroy(other);
  }
  FuzzIrs(const FuzzIrs&) = delete;
  FuzzIrs& operator=(const FuzzIrs&) = delete;

  plx_ir* ir = nullptr;
  plx_ir* other = nullptr;
  plx_tensor tensors[3] = {};  // this IR's two, the other's one
  plx_remote_buffer buffer = 0;
};

// What a C caller passes to plx_ir_add_op, and the arrays its pointers point to.
struct CallerOp {
  const char* op = nullptr;
  std::vector<plx_tensor> inputs;
  bool null_inputs = false;
  std::vector<plx_attr> attrs;
  bool null_attrs = false;
  std::deque<std::vector<int64_t>> ints;  // a deque: the attributes' pointers stay valid
  size_t max_outputs = 0;
  bool null_outputs = false;
};

const char* read_op_name(FuzzInputReader& in) {
  const uint8_t pick = in.get<uint8_t>();
  return pick < std::size(kFuzzOps) ? kFuzzOps[pick] : in.string();
}

plx_tensor read_input(FuzzInputReader& in, const FuzzIrs& irs) {
  const uint8_t pick = in.get<uint8_t>();
  return pick < std::size(irs.tensors) ? irs.tensors[pick] : in.get<uint64_t>();
}

void read_attr(FuzzInputReader& in, CallerOp& call, plx_remote_buffer buffer) {
  plx_attr a{};
  a.name = in.string();
  a.kind = in.get<int32_t>();
  a.i = in.get<int64_t>();
  if (a.name != nullptr && std::string(a.name) == "buffer") a.i ^= static_cast<int64_t>(buffer);
  a.f = in.get<double>();
  const uint8_t num_ints = in.count(16);
  if (num_ints == kNullArray) {
    a.num_ints = 2;  // and ints NULL
  } else {
    std::vector<int64_t>& ints = call.ints.emplace_back();
    for (uint8_t k = 0; k < num_ints; ++k) ints.push_back(in.get<int64_t>());
    a.ints = ints.data();
    a.num_ints = num_ints;
  }
  a.s = in.string();
  call.attrs.push_back(a);
}

void read_caller_op(FuzzInputReader& in, const FuzzIrs& irs, CallerOp& call) {
  call.op = read_op_name(in);
  const uint8_t num_inputs = in.count(4);
  call.null_inputs = num_inputs == kNullArray;
  for (uint8_t k = 0; k < num_inputs && !call.null_inputs; ++k) call.inputs.push_back(read_input(in, irs));
  const uint8_t num_attrs = in.count(8);
  call.null_attrs = num_attrs == kNullArray;
  for (uint8_t k = 0; k < num_attrs && !call.null_attrs; ++k) read_attr(in, call, irs.buffer);
  const uint8_t max_outputs = in.count(kMaxOutputs);
  call.null_outputs = max_outputs == kNullArray;
  call.max_outputs = call.null_outputs ? 1 : max_outputs;
}

void check_added(const FuzzIrs& irs, const CallerOp& call, const plx_tensor* outputs, size_t num_outputs) {
  if (num_outputs > call.max_outputs) bug("plx_ir_add_op wrote " + std::to_string(num_outputs) + " outputs");
  for (size_t k = 0; k < num_outputs; ++k) {
    size_t rank = 0;
    if (plx_ir_get_tensor_type(irs.ir, outputs[k], nullptr, nullptr, 0, &rank) != PLX_OK) {
      bug(std::string("output ") + std::to_string(k) + " of an accepted op: " + plx_last_error());
    }
  }
}

void fuzz_op_attributes(FuzzInputReader& in) {
  const FuzzIrs irs;
  CallerOp call;
  read_caller_op(in, irs, call);
  const ir::Graph& graph = irs.ir->graph;
  const size_t ops = graph.num_ops(), tensors = graph.num_tensors();
  plx_tensor outputs[kMaxOutputs] = {};
  size_t num_outputs = 0;
  const plx_status status =
      plx_ir_add_op(irs.ir, call.op, call.null_inputs ? nullptr : call.inputs.data(), call.null_inputs ? 1 : call.inputs.size(),
                    call.null_attrs ? nullptr : call.attrs.data(), call.null_attrs ? 1 : call.attrs.size(),
                    call.null_outputs ? nullptr : outputs, call.max_outputs, &num_outputs);
  if (status == PLX_OK) {
    check_added(irs, call, outputs, num_outputs);
    return;
  }
  if (status == PLX_ERR_INTERNAL || std::string(plx_last_error()).empty()) {
    bug(std::string("plx_ir_add_op: ") + plx_status_name(status) + ": '" + plx_last_error() + "'");
  }
  if (graph.num_ops() != ops || graph.num_tensors() != tensors) bug("a refused plx_ir_add_op changed the IR");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  register_fuzz_ops();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInputReader in(data, size);
  if (static_cast<plexus::test::FuzzMode>(in.get<uint8_t>() % 2) == plexus::test::FuzzMode::SessionOptions) {
    fuzz_session_options(in);
  } else {
    fuzz_op_attributes(in);
  }
  return 0;
}
