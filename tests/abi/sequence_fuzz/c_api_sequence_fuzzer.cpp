// libFuzzer target driving the public C API (<plexus/plexus.h> only) with random but typed
// call sequences. Build and run: see this folder's CMakeLists.txt; scripts/test.sh runs it
// for PLEXUS_FUZZ_SECONDS. The input (sequence_input.h) is a list of calls: create IRs, set
// their replication factor, add variables (grouped, sharded, remote), constants, streams,
// remote buffers, scopes and ops (names from plx_runtime_get_ops or bogus, attributes of any
// kind and value, inputs of this IR, another IR, a stream or any number), autodiff, sessions
// with small random options (R 1..4, device_iterations 1..4, gradient accumulation 1..3,
// strategies, stages, output modes, prefetch, io threads; a device memory cap of a few MB
// bounds the work), runs (synchronous, with callbacks, asynchronous) with right and wrong
// host arrays, variable reads and writes, getters, checkpoints, cancellation, and
// destruction of IRs, sessions and runs in any order. A freed handle is never passed (that
// is no valid C usage); ids of destroyed IRs are (ids are plain numbers).
//
// After every call: the status is a plx_status and not PLX_ERR_INTERNAL, and an error has a
// non-empty plx_last_error(). Any crash, sanitizer report, leak (libFuzzer's -detect_leaks),
// or unit running longer than kHangSeconds (a watchdog aborts) is a bug.
#include <plexus/plexus.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "abi/fuzz/fuzz_input.h"
#include "sequence_input.h"

namespace {

using plexus::test::FuzzInputReader;
using plexus::test::SequenceOp;

constexpr int kHangSeconds = 30;
constexpr size_t kMaxCalls = 64;
constexpr size_t kMaxIrs = 4;
constexpr size_t kMaxSessions = 3;
constexpr size_t kMaxSessionsCreated = 3;
constexpr size_t kMaxRuns = 6;
constexpr size_t kMaxTensors = 64;
constexpr size_t kMaxHostElements = 1 << 18;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "c_api_sequence_fuzzer: %s\n", what.c_str());
  std::abort();
}

// PLEXUS_FUZZ_TRACE=1 prints every checked call and its status (to see what an input does).
bool tracing() {
  static const bool on = std::getenv("PLEXUS_FUZZ_TRACE") != nullptr;
  return on;
}

// The check after every call.
plx_status check(plx_status status, const char* call) {
  if (tracing()) {
    std::fprintf(stderr, "%s -> %d %s\n", call, status, status == PLX_OK ? "" : plx_last_error());
  }
  if (status == PLX_OK) return status;
  const char* message = plx_last_error();  // before any other Plexus call
  const std::string text = message == nullptr ? std::string("(null)") : std::string(message);
  if (status < PLX_ERR_INVALID_ARGUMENT || (status > PLX_ERR_STILL_RUNNING && status != PLX_ERR_INTERNAL)) {
    bug(std::string(call) + " returned " + std::to_string(status) + ", no plx_status: '" + text + "'");
  }
  if (status == PLX_ERR_INTERNAL) bug(std::string(call) + " returned PLX_ERR_INTERNAL: '" + text + "'");
  if (message == nullptr || *message == '\0') {
    bug(std::string(call) + " returned " + plx_status_name(status) + " without a message");
  }
  return status;
}
#define CHECK(call) check((call), #call)

// ---- The op catalog (plx_runtime_get_ops) ------------------------------------------------

struct AttrSpec {
  std::string name;
  plx_attr_kind kind;
  nlohmann::json default_value;  // null when required
};
struct OpSpec {
  std::string name;
  size_t min_inputs, max_inputs;
  std::vector<AttrSpec> attrs;
};
std::vector<OpSpec>& catalog() {
  static std::vector<OpSpec> ops;
  return ops;
}

void load_catalog() {
  size_t size = 0;
  if (plx_runtime_get_ops(nullptr, 0, &size) != PLX_ERR_BUFFER_TOO_SMALL) bug("plx_runtime_get_ops: no size");
  std::string text(size, '\0');
  if (plx_runtime_get_ops(text.data(), text.size(), &size) != PLX_OK) bug("plx_runtime_get_ops failed");
  text.resize(size - 1);
  const nlohmann::json j = nlohmann::json::parse(text);
  for (const auto& op : j.at("ops")) {
    OpSpec spec{op.at("name"), op.at("min_inputs"), op.at("max_inputs"), {}};
    for (const auto& a : op.at("attrs")) {
      const std::string kind = a.at("kind");
      const plx_attr_kind k = kind == "int"     ? PLX_ATTR_INT
                              : kind == "float" ? PLX_ATTR_FLOAT
                              : kind == "ints"  ? PLX_ATTR_INTS
                                                : PLX_ATTR_STRING;
      spec.attrs.push_back({a.at("name"), k, a.contains("default") ? a.at("default") : nlohmann::json()});
    }
    catalog().push_back(std::move(spec));
  }
  if (catalog().empty()) bug("the op catalog is empty");
}

// ---- The fuzzer's state: what the C caller holds ----------------------------------------

struct Variable {
  plx_tensor id;
  plx_dtype dtype;
};
struct Stream {
  plx_stream id;
  plx_dtype dtype;
};
struct Ir {
  plx_ir* ir = nullptr;
  int64_t replication = 1;
  std::vector<plx_tensor> tensors;
  std::vector<Variable> variables;
  std::vector<Stream> h2d, d2h;
  std::vector<plx_remote_buffer> buffers;
};
struct Session {
  plx_session* session = nullptr;
  std::vector<Variable> variables;  // of its IR when it was made
  std::vector<Stream> h2d, d2h;
};

// A run's host data, borrowed by the run until it completes (plx_run_destroy).
struct RunData {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<plx_host_array> inputs, outputs;
  std::vector<plx_stream_callback> callbacks;
  plx_status fill_status = PLX_OK;
  uint8_t seed = 0;
  std::atomic<int> completions{0};
};
struct Run {
  plx_run* run = nullptr;
  std::unique_ptr<RunData> data;
};

plx_status fill(void* user_data, plx_stream, int64_t step, int64_t replica, void* buffer, size_t bytes) {
  const auto* d = static_cast<const RunData*>(user_data);
  std::memset(buffer, 0, bytes);
  if (bytes > 0) static_cast<uint8_t*>(buffer)[0] = static_cast<uint8_t>(d->seed + step + replica) & 0x3F;
  return step == 0 ? d->fill_status : PLX_OK;
}
plx_status deliver(void* user_data, plx_stream, int64_t, int64_t, const void* data, size_t bytes) {
  const auto* d = static_cast<const RunData*>(user_data);
  volatile uint8_t sink = bytes > 0 ? static_cast<const uint8_t*>(data)[bytes - 1] : 0;  // reads every byte given
  (void)sink;
  return d->fill_status == PLX_ERR_CANCELLED ? PLX_ERR_RUNTIME : PLX_OK;
}
void on_complete(void* user_data, plx_status status, const char* message) {
  auto* d = static_cast<RunData*>(user_data);
  if (status < PLX_OK || (status > PLX_ERR_STILL_RUNNING && status != PLX_ERR_INTERNAL)) {
    bug("on_complete got status " + std::to_string(status));
  }
  if (status != PLX_OK && (message == nullptr || *message == '\0')) bug("on_complete: an error without a message");
  if (status == PLX_ERR_INTERNAL) bug(std::string("on_complete: PLX_ERR_INTERNAL: ") + message);
  d->completions.fetch_add(1);
}

size_t dtype_size(plx_dtype d) {
  if (d == PLX_DTYPE_UINT8 || d == PLX_DTYPE_INT8 || d == PLX_DTYPE_BOOL) return 1;
  return d == PLX_DTYPE_FLOAT16 ? 2 : 4;
}

std::string& temp_dir() {
  static std::string dir;
  return dir;
}

class Fuzz {
 public:
  Fuzz(const uint8_t* data, size_t size) : in_(data, size), size_(size) {}
  ~Fuzz() { teardown(); }

  void run() {
    for (size_t call = 0; call < kMaxCalls && consumed() < size_; ++call) {
      const auto op = static_cast<SequenceOp>(byte() % static_cast<uint8_t>(SequenceOp::Count));
      step(op);
    }
  }

 private:
  // ---- Reading the input ----
  uint8_t byte() {
    ++consumed_;
    return in_.get<uint8_t>();
  }
  size_t consumed() const { return consumed_; }
  const char* string() {
    const char* s = in_.string();
    consumed_ += 1 + (s ? std::strlen(s) : 0);
    return s;
  }
  uint64_t u64() {
    consumed_ += 8;
    return in_.get<uint64_t>();
  }
  template <class T>
  T& pick(std::vector<T>& v) {
    return v[byte() % v.size()];
  }

  plx_dtype dtype() {
    const uint8_t b = byte();
    if (b == 0xFF) return 0;
    if (b == 0xFE) return 77;
    static constexpr plx_dtype kinds[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT32, PLX_DTYPE_INT32, PLX_DTYPE_UINT8,
                                          PLX_DTYPE_FLOAT16, PLX_DTYPE_INT8,    PLX_DTYPE_UINT32, PLX_DTYPE_BOOL};
    return kinds[b % 8];
  }

  std::vector<int64_t> shape() {
    const uint8_t r = byte();
    const size_t rank = r == 0xFF ? PLX_MAX_RANK + 1 : r % 5;
    std::vector<int64_t> s;
    for (size_t i = 0; i < rank; ++i) {
      const uint8_t b = byte();
      s.push_back(b == 0xFF ? -1 : b == 0xFE ? (int64_t{1} << 40) : 1 + b % 4);
    }
    return s;
  }

  // Elements of a shape, or SIZE_MAX when a dim is negative or the product is large.
  static size_t numel(const int64_t* shape, size_t rank) {
    size_t n = 1;
    for (size_t i = 0; i < rank; ++i) {
      if (shape[i] < 0 || shape[i] > static_cast<int64_t>(kMaxHostElements)) return SIZE_MAX;
      n *= static_cast<size_t>(shape[i]);
      if (n > kMaxHostElements) return SIZE_MAX;
    }
    return n;
  }

  // Values of `dtype` for `bytes` bytes: small floats, ints 0..3 (labels in range, mostly).
  std::vector<uint8_t> values(plx_dtype dtype, size_t bytes, uint8_t seed) {
    std::vector<uint8_t> v(bytes);
    if (dtype == PLX_DTYPE_FLOAT32) {
      for (size_t i = 0; i + 4 <= bytes; i += 4) {
        const float f = seed == 0xFF ? std::numeric_limits<float>::quiet_NaN()
                                     : static_cast<float>(static_cast<int>((i / 4 + seed) % 7) - 3) * 0.25f;
        std::memcpy(&v[i], &f, 4);
      }
    } else if (dtype == PLX_DTYPE_INT32) {
      for (size_t i = 0; i + 4 <= bytes; i += 4) {
        const int32_t x = seed == 0xFF ? -1 : static_cast<int32_t>((i / 4 + seed) % 4);
        std::memcpy(&v[i], &x, 4);
      }
    } else {
      for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(i + seed);
    }
    return v;
  }

  Ir* ir_pick() {
    if (irs_.empty()) return nullptr;
    return &pick(irs_);
  }
  Session* session_pick() {
    if (sessions_.empty()) return nullptr;
    return &pick(sessions_);
  }

  // A tensor id as a caller might pass it: mostly one of this IR's, else another IR's (live
  // or destroyed), a stream or buffer id of this IR, or any number.
  plx_tensor operand(Ir& ir) {
    const uint8_t how = byte() % 10;
    if (how < 7 && !ir.tensors.empty()) return pick(ir.tensors);
    if (how <= 7) {
      std::vector<plx_tensor> others = dead_ids_;
      for (const Ir& o : irs_) {
        if (&o != &ir) others.insert(others.end(), o.tensors.begin(), o.tensors.end());
      }
      if (!others.empty()) return pick(others);
    }
    if (how == 8) {
      std::vector<uint64_t> ids = ir.buffers;
      for (const Stream& s : ir.h2d) ids.push_back(s.id);
      for (const Stream& s : ir.d2h) ids.push_back(s.id);
      if (!ids.empty()) return pick(ids);
    }
    const uint8_t b = byte();
    return b < 8 ? b : u64();
  }

  void add_tensor(Ir& ir, plx_tensor t) {
    if (ir.tensors.size() < kMaxTensors) ir.tensors.push_back(t);
  }

  // ---- Building IRs ----
  void create_ir() {
    if (irs_.size() >= kMaxIrs) return;
    const uint8_t b = byte();
    plx_ir* ir = nullptr;
    if (CHECK(plx_ir_create(&ir)) != PLX_OK) return;
    Ir& r = irs_.emplace_back();
    r.ir = ir;
    const int64_t replication = 1 + b % 4;
    if (b % 8 < 4 && CHECK(plx_ir_set_replication_factor(ir, replication)) == PLX_OK) r.replication = replication;
  }

  void set_replication(Ir& ir) {
    const uint8_t b = byte();
    const int64_t replication = b == 0xFF ? -1 : b == 0xFE ? 0 : 1 + b % 4;
    if (CHECK(plx_ir_set_replication_factor(ir.ir, replication)) == PLX_OK) ir.replication = replication;
    int64_t got = 0;
    CHECK(plx_ir_get_replication_factor(ir.ir, &got));
    if (got != ir.replication) bug("plx_ir_get_replication_factor: " + std::to_string(got));
  }

  // Data of a variable or constant and its byte count, as the mode byte says: right, short,
  // long, NULL.
  struct Data {
    std::vector<uint8_t> bytes;
    const void* ptr;
    size_t size;
  };
  Data data(plx_dtype dtype, size_t elements) {
    const uint8_t mode = byte();
    const uint8_t seed = byte();
    const size_t right = elements == SIZE_MAX ? 4 : elements * dtype_size(dtype);
    size_t size = right;
    if (mode % 10 == 6 && size >= 4) size -= 4;
    if (mode % 10 == 7) size += 4;
    Data d{values(dtype == 0 || dtype == 77 ? PLX_DTYPE_UINT8 : dtype, size, seed), nullptr, size};
    d.ptr = d.bytes.empty() ? nullptr : d.bytes.data();
    if (mode % 10 == 8) d.ptr = nullptr;
    if (mode % 10 == 9) {
      d.ptr = nullptr;
      d.size = 0;
    }
    return d;
  }

  const char* name() {
    static const char* const names[] = {"w", "v", "x", "y", "w0", "w1", "label", ""};
    const uint8_t b = byte();
    if (b == 0xFF) return nullptr;
    if (b == 0xFE) return string();
    return names[b % 8];
  }

  // Variable options as the mode byte says (`o` holds the grouping they point to); `groups` receives the number of groups the
  // caller sizes its data for.
  struct Options {
    plx_replica_grouping grouping{};
    plx_variable_options options{};
    bool null = true;
  };
  void variable_options(const Ir& ir, size_t& groups, Options& o) {
    groups = 1;
    const uint8_t mode = byte();
    const uint8_t g = byte(), s = byte(), retrieval = byte(), shard = byte();
    if (mode % 3 == 0) return;
    o.null = false;
    plx_variable_options_init(&o.options);
    if (mode % 3 == 2) {
      if (CHECK(plx_replica_grouping_create(ir.replication, g % 5, 1 + s % 3, &o.grouping)) != PLX_OK) {
        o.grouping = {ir.replication, static_cast<int64_t>(g % 5), static_cast<int64_t>(s % 3)};
      }
      if (g == 0xFF) o.grouping = {ir.replication + 1, 1, 1};
      o.options.grouping = &o.grouping;
      int64_t n = 1;
      if (plx_replica_grouping_get_num_groups(&o.grouping, &n) == PLX_OK && n > 0 && n <= 8) groups = n;
    }
    o.options.retrieval_mode = retrieval % 3 == 2 ? 9 : retrieval % 2;
    o.options.shard_over = shard % 4;
    if (mode == 0xFE) o.options.struct_size = 24;
    if (mode == 0xFD) o.options.struct_size = 7;
  }

  void add_variable(Ir& ir) {
    const char* n = name();
    const plx_dtype dt = dtype();
    const std::vector<int64_t> s = shape();
    const uint8_t kind = byte();
    size_t groups = 1;
    Options o;
    variable_options(ir, groups, o);
    const size_t elements = numel(s.data(), s.size());
    Data d = data(dt, elements == SIZE_MAX ? SIZE_MAX : elements * groups);
    plx_tensor t = 0, shard = 0;
    plx_status st;
    if (kind % 4 == 3) {
      st = CHECK(plx_ir_add_replica_sharded_variable(ir.ir, n, dt, s.data(), s.size(), d.ptr, d.size,
                                                     o.null ? nullptr : &o.options, &t, &shard));
    } else if (o.null && kind % 4 == 0) {
      st = CHECK(plx_ir_add_variable(ir.ir, n, dt, s.data(), s.size(), d.ptr, d.size, &t));
    } else {
      st = CHECK(plx_ir_add_variable_with_options(ir.ir, n, dt, s.data(), s.size(), d.ptr, d.size,
                                                  o.null ? nullptr : &o.options, &t));
    }
    if (st != PLX_OK) return;
    add_tensor(ir, t);
    ir.variables.push_back({t, dt});
  }

  void add_constant(Ir& ir) {
    const plx_dtype dt = dtype();
    const std::vector<int64_t> s = shape();
    Data d = data(dt, numel(s.data(), s.size()));
    plx_tensor t = 0;
    if (CHECK(plx_ir_add_constant(ir.ir, dt, s.data(), s.size(), d.ptr, d.size, &t)) == PLX_OK) add_tensor(ir, t);
  }

  void add_h2d(Ir& ir) {
    const char* n = name();
    const plx_dtype dt = dtype();
    const std::vector<int64_t> s = shape();
    plx_stream stream = 0;
    plx_tensor t = 0;
    if (CHECK(plx_ir_add_h2d_stream(ir.ir, n, dt, s.data(), s.size(), &stream, &t)) != PLX_OK) return;
    ir.h2d.push_back({stream, dt});
    add_tensor(ir, t);
  }

  void add_d2h(Ir& ir) {
    const char* n = name();
    const plx_tensor t = operand(ir);
    plx_stream stream = 0;
    if (CHECK(plx_ir_add_d2h_stream(ir.ir, n, t, &stream)) != PLX_OK) return;
    plx_dtype dt = 0;
    if (CHECK(plx_ir_get_tensor_type(ir.ir, t, &dt, nullptr, 0, nullptr)) != PLX_OK) bug("d2h stream of no tensor");
    ir.d2h.push_back({stream, dt});
  }

  // An int attribute value: small, a buffer id, or an extreme.
  int64_t int_value(const Ir& ir, const std::string& attr) {
    const uint8_t b = byte();
    if (attr == "buffer" && b % 4 != 3 && !ir.buffers.empty()) return static_cast<int64_t>(ir.buffers[b % ir.buffers.size()]);
    if (attr == "dtype" && b % 4 != 3) return 1 + b % 3;
    switch (b % 16) {
      case 12: return -2;
      case 13: return std::numeric_limits<int64_t>::max();
      case 14: return std::numeric_limits<int64_t>::min();
      case 15: return int64_t{1} << 33;
      default: return static_cast<int64_t>(b % 12 % 6) - 1;  // -1..4
    }
  }

  void add_op(Ir& ir) {
    const uint8_t which = byte();
    const OpSpec* spec = nullptr;
    const char* op_name;
    if (which < 0xF0) {
      spec = &catalog()[which % catalog().size()];
      op_name = spec->name.c_str();
    } else if (which == 0xFF) {
      op_name = nullptr;
    } else {
      op_name = string();
    }
    // Inputs: the op's count mostly, else any count up to 6 (or a NULL array).
    const uint8_t count = byte();
    size_t num_inputs = count % 7;
    if (spec != nullptr && count < 0xC0) {
      num_inputs = spec->min_inputs + count % (spec->max_inputs - spec->min_inputs + 1);
    }
    std::vector<plx_tensor> inputs;
    for (size_t i = 0; i < num_inputs; ++i) inputs.push_back(operand(ir));
    const plx_tensor* input_ptr = inputs.empty() ? nullptr : inputs.data();
    if (count == 0xFF) {  // NULL with a count
      input_ptr = nullptr;
      num_inputs = 1;
    }
    // The first input's shape, for attributes that take one (reshape, expand, perm).
    std::vector<int64_t> first_shape(PLX_MAX_RANK);
    size_t first_rank = 0;
    if (!inputs.empty() &&
        plx_ir_get_tensor_type(ir.ir, inputs[0], nullptr, first_shape.data(), PLX_MAX_RANK, &first_rank) != PLX_OK) {
      first_rank = 0;
    }
    first_shape.resize(first_rank);

    // Attributes: each of the spec's, present or not, of its kind or another, then extras.
    std::vector<plx_attr> attrs;
    std::vector<std::vector<int64_t>> lists;
    lists.reserve(16);
    auto value = [&](plx_attr& a, const std::string& attr_name, const nlohmann::json& default_value) {
      switch (a.kind) {
        case PLX_ATTR_INT: a.i = int_value(ir, attr_name); break;
        case PLX_ATTR_FLOAT: {
          static constexpr double floats[] = {0.0, 1e-3, 0.5, 1.0, -1.0, 0.9, 1e300, -0.0};
          const uint8_t b = byte();
          a.f = b == 0xFF ? std::nan("") : b == 0xFE ? HUGE_VAL : floats[b % 8];
          break;
        }
        case PLX_ATTR_INTS: {
          const uint8_t b = byte();
          std::vector<int64_t>& l = lists.emplace_back();
          if (b % 8 == 0) {
            l = first_shape;
          } else if (b % 8 == 1) {
            l = first_shape;
            std::reverse(l.begin(), l.end());
            if (attr_name == "perm") {
              l.clear();
              for (size_t i = first_rank; i-- > 0;) l.push_back(static_cast<int64_t>(i));
            }
          } else if (b % 8 == 2) {
            int64_t n = 1;
            for (int64_t d : first_shape) n *= d;
            l = {n};
          } else if (b % 8 == 3 && default_value.is_array()) {
            l = default_value.get<std::vector<int64_t>>();
          } else {
            const size_t n = byte() % 5;
            for (size_t i = 0; i < n; ++i) l.push_back(int_value(ir, attr_name));
          }
          a.ints = l.empty() ? nullptr : l.data();
          a.num_ints = l.size();
          if (b == 0xFF) {
            a.ints = nullptr;
            a.num_ints = 2;
          }
          break;
        }
        case PLX_ATTR_STRING: {
          static const char* const strings[] = {"sum", "mean", "max", "min", "auto", "", "prod", nullptr};
          const uint8_t b = byte();
          if (b % 8 == 0 && default_value.is_string()) {
            strings_.push_back(default_value.get<std::string>());
            a.s = strings_.back().c_str();
          } else if (b == 0xFE) {
            a.s = string();
          } else {
            a.s = strings[b % 8];
          }
          break;
        }
        default: break;
      }
    };
    if (spec != nullptr) {
      for (const AttrSpec& as : spec->attrs) {
        const uint8_t mode = byte();
        if (mode % 4 == 0) continue;
        plx_attr a{};
        a.name = as.name.c_str();
        a.kind = mode % 4 == 3 ? 1 + (as.kind + mode / 4) % 4 : as.kind;
        value(a, as.name, as.default_value);
        attrs.push_back(a);
      }
    }
    const uint8_t extras = byte() % 4 == 3 ? 1 + byte() % 2 : 0;
    for (uint8_t e = 0; e < extras; ++e) {
      plx_attr a{};
      const uint8_t b = byte();
      a.name = b == 0xFF ? nullptr : b == 0xFE ? string() : b % 2 ? "axis" : "bogus";
      const uint8_t k = byte();
      a.kind = k == 0xFF ? 0 : k == 0xFE ? 42 : 1 + k % 4;
      value(a, a.name ? a.name : "", nlohmann::json());
      attrs.push_back(a);
    }
    // Outputs: room for 4 mostly, else none, too few, or NULL with room.
    const uint8_t out_mode = byte();
    plx_tensor outputs[4] = {};
    size_t max_outputs = 4;
    plx_tensor* out_ptr = outputs;
    if (out_mode % 8 == 5) max_outputs = 0, out_ptr = nullptr;
    if (out_mode % 8 == 6) out_ptr = nullptr;
    size_t num_outputs = kMaxTensors;
    if (tracing()) {
      std::fprintf(stderr, "add_op '%s' on IR %p, inputs", op_name ? op_name : "(null)", static_cast<void*>(ir.ir));
      for (plx_tensor t : inputs) std::fprintf(stderr, " %llu", static_cast<unsigned long long>(t));
      std::fprintf(stderr, ", %zu attributes\n", attrs.size());
    }
    const plx_status st =
        CHECK(plx_ir_add_op(ir.ir, op_name, input_ptr, num_inputs, attrs.empty() ? nullptr : attrs.data(),
                            attrs.size(), out_ptr, max_outputs, out_mode % 8 == 7 ? nullptr : &num_outputs));
    if (st != PLX_OK) return;
    if (out_mode % 8 != 7 && num_outputs > max_outputs) bug("plx_ir_add_op: more outputs than room, and PLX_OK");
    if (out_ptr == nullptr) return;
    const size_t got = out_mode % 8 == 7 ? 0 : num_outputs;  // without num_outputs the count is unknown
    for (size_t i = 0; i < got; ++i) {
      if (outputs[i] == 0) bug("plx_ir_add_op: output id 0");
      add_tensor(ir, outputs[i]);
    }
  }

  void autodiff(Ir& ir) {
    const plx_tensor loss = operand(ir);
    const uint8_t count = byte();
    std::vector<plx_tensor> wrt;
    for (size_t i = 0; i < count % 4; ++i) wrt.push_back(operand(ir));
    std::vector<plx_tensor> grads(wrt.size() + 1, 0);
    if (tracing()) {
      std::fprintf(stderr, "autodiff on IR %p: loss %llu, wrt", static_cast<void*>(ir.ir), static_cast<unsigned long long>(loss));
      for (plx_tensor t : wrt) std::fprintf(stderr, " %llu", static_cast<unsigned long long>(t));
      std::fprintf(stderr, "\n");
    }
    const plx_status st = CHECK(plx_ir_autodiff(ir.ir, loss, count == 0xFF ? nullptr : wrt.data(),
                                                count == 0xFF ? 1 : wrt.size(), count == 0xFE ? nullptr : grads.data()));
    if (st != PLX_OK) return;
    for (size_t i = 0; i < wrt.size(); ++i) {
      if (grads[i] == 0) bug("plx_ir_autodiff: gradient id 0");
      add_tensor(ir, grads[i]);
    }
  }

  void tensor_type(Ir& ir) {
    const plx_tensor t = operand(ir);
    const size_t max_rank = byte() % (PLX_MAX_RANK + 1);
    int64_t dims[PLX_MAX_RANK] = {};
    size_t rank = 0;
    plx_dtype dt = 0;
    CHECK(plx_ir_get_tensor_type(ir.ir, t, &dt, max_rank ? dims : nullptr, max_rank, &rank));
  }

  void add_remote_buffer(Ir& ir) {
    const plx_dtype dt = dtype();
    const std::vector<int64_t> s = shape();
    const uint8_t e = byte();
    const int64_t entries = e == 0xFF ? 0 : e == 0xFE ? -1 : 1 + e % 4;
    plx_remote_buffer b = 0;
    if (CHECK(plx_ir_add_remote_buffer(ir.ir, dt, s.data(), s.size(), entries, &b)) == PLX_OK) ir.buffers.push_back(b);
  }

  void add_remote_variable(Ir& ir) {
    const char* n = name();
    const plx_dtype dt = dtype();
    const std::vector<int64_t> s = shape();
    const uint8_t kind = byte();
    const plx_remote_buffer buffer = ir.buffers.empty() || kind % 8 == 7 ? operand(ir) : pick(ir.buffers);
    const uint8_t e = byte();
    const int64_t entry = e == 0xFF ? -1 : e % 4;
    size_t groups = 1;
    Options o;
    variable_options(ir, groups, o);
    const size_t elements = numel(s.data(), s.size());
    Data d = data(dt, elements == SIZE_MAX ? SIZE_MAX : elements * groups);
    plx_tensor t = 0;
    plx_status st;
    if (kind % 2) {
      st = CHECK(plx_ir_add_remote_replica_sharded_variable(ir.ir, n, dt, s.data(), s.size(), d.ptr, d.size, buffer,
                                                            entry, o.null ? nullptr : &o.options, &t));
    } else {
      st = CHECK(plx_ir_add_remote_variable(ir.ir, n, dt, s.data(), s.size(), d.ptr, d.size, buffer, entry,
                                            o.null ? nullptr : &o.options, &t));
    }
    if (st != PLX_OK) return;
    add_tensor(ir, t);
    ir.variables.push_back({t, dt});
  }

  void scope(Ir& ir) {
    static const char* const blocks[] = {"b0", "b1", "b2", ""};
    const uint8_t which = byte();
    const uint8_t b = byte();
    switch (which % 4) {
      case 0: CHECK(plx_ir_begin_sequence(ir.ir)); break;
      case 1: CHECK(plx_ir_end_sequence(ir.ir)); break;
      case 2: CHECK(plx_ir_begin_block(ir.ir, b == 0xFF ? nullptr : blocks[b % 4], static_cast<int64_t>(which / 4 % 4) - 1)); break;
      default: CHECK(plx_ir_end_block(ir.ir)); break;
    }
  }

  void destroy_ir() {
    if (irs_.empty()) return;
    const size_t i = byte() % irs_.size();
    for (plx_tensor t : irs_[i].tensors) {
      if (dead_ids_.size() < kMaxTensors) dead_ids_.push_back(t);
    }
    plx_ir_destroy(irs_[i].ir);
    irs_.erase(irs_.begin() + static_cast<ptrdiff_t>(i));
  }

  // ---- Sessions ----
  void create_session(Ir& ir) {
    if (sessions_.size() >= kMaxSessions || sessions_created_ >= kMaxSessionsCreated) return;
    ++sessions_created_;
    static const char* const blocks[] = {"b0", "b1", "b2", "nope"};
    plx_session_options o;
    plx_session_options_init(&o);
    const uint8_t b0 = byte(), b1 = byte(), b2 = byte(), b3 = byte(), b4 = byte(), b5 = byte(), b6 = byte();
    o.device_iterations = 1 + b0 % 4;
    o.gradient_accumulation = 1 + b0 / 4 % 3;
    o.threads_per_device = b0 / 16 % 2 ? 1 : 0;
    static constexpr size_t memory[] = {size_t{4} << 20, size_t{1} << 20, size_t{8} << 20, 256};
    o.device_memory_bytes = memory[b1 % 4];
    o.collective_timeout_ms = 100 + (b1 / 4 % 8) * 100;
    const char* collectives = nullptr;
    switch (b2 % 8) {
      case 5: collectives = "local"; break;
      case 6: collectives = "nope"; break;
      case 7: collectives = string(); break;
      default: break;
    }
    o.collectives_plugin = collectives;
    o.output_mode = b2 / 8 % 5 == 4 ? 7 : b2 / 8 % 5;
    o.output_return_period = b3 % 8 == 7 ? 0 : 1 + b3 % 4;
    o.offload_optimizer_state = b3 / 8 % 2;
    o.profile = b3 / 16 % 2;
    o.prefetch_depth = b4 % 4;
    o.io_threads = b4 / 4 % 8 == 7 ? 0 : 1 + b4 / 4 % 2;
    switch (b4 / 32) {
      case 5: o.execution_strategy = "pipelined"; break;
      case 6: o.execution_strategy = "sharded"; break;
      case 7: o.execution_strategy = string(); break;
      default: break;
    }
    o.strategy_options = b5 % 8 == 7 ? "fill_drain" : b5 % 8 == 6 ? string() : nullptr;
    std::vector<plx_stage> stages;
    std::vector<std::vector<const char*>> names;
    const size_t num_stages = b5 / 8 % 4;
    names.reserve(num_stages);
    for (size_t s = 0; s < num_stages; ++s) {
      const uint8_t b = byte();
      std::vector<const char*>& n = names.emplace_back();
      for (size_t k = 0; k < b % 3; ++k) n.push_back(blocks[byte() % 4]);
      stages.push_back({n.empty() ? nullptr : n.data(), n.size(), static_cast<int64_t>(b / 4 % 4) - 1});
    }
    o.stages = stages.empty() ? nullptr : stages.data();
    o.num_stages = stages.size();
    if (b6 % 16 == 15) o.num_workers = 2, o.worker_index = b6 / 16 % 2;
    o.weight_update_on_host = b6 % 8 == 3;
    if (b5 / 32 == 1) o.gradient_bucket_bytes = 0;   // one all-reduce per gradient
    if (b5 / 32 == 2) o.gradient_bucket_bytes = 16;  // buckets of a few small gradients
    static constexpr size_t sizes[] = {48, 112, 128, 144};
    if (b6 / 32 == 7) o.struct_size = sizes[b6 / 8 % 4];
    if (tracing()) {
      std::fprintf(stderr,
                   "session options: R %lld, iterations %lld, accumulation %lld, threads %d, memory %zu, collectives %s, "
                   "timeout %lld, output mode %d period %lld, offload %d, profile %d, prefetch %lld, io threads %d, "
                   "strategy %s (%s), stages %zu, workers %lld/%lld, update on host %d, struct_size %zu\n",
                   static_cast<long long>(ir.replication), static_cast<long long>(o.device_iterations),
                   static_cast<long long>(o.gradient_accumulation), o.threads_per_device, o.device_memory_bytes,
                   o.collectives_plugin ? o.collectives_plugin : "NULL", static_cast<long long>(o.collective_timeout_ms),
                   o.output_mode, static_cast<long long>(o.output_return_period), o.offload_optimizer_state, o.profile,
                   static_cast<long long>(o.prefetch_depth), o.io_threads,
                   o.execution_strategy ? o.execution_strategy : "NULL", o.strategy_options ? o.strategy_options : "NULL",
                   o.num_stages, static_cast<long long>(o.num_workers), static_cast<long long>(o.worker_index),
                   o.weight_update_on_host, o.struct_size);
    }
    plx_session* session = nullptr;
    if (CHECK(plx_session_create(ir.ir, &o, &session)) != PLX_OK) return;
    if (session == nullptr) bug("plx_session_create: PLX_OK and no session");
    sessions_.push_back({session, ir.variables, ir.h2d, ir.d2h});
  }

  // A host array for `stream`, as the mode says: right, wrong dtype, wrong shape.
  bool host_array(Session& s, const Stream& stream, uint8_t mode, RunData& d, std::vector<plx_host_array>& into) {
    int64_t dims[PLX_MAX_RANK + 1] = {};
    size_t rank = 0;
    if (CHECK(plx_session_get_host_shape(s.session, stream.id, dims, PLX_MAX_RANK, &rank)) != PLX_OK) return false;
    std::vector<int64_t> shape(dims, dims + rank);
    plx_dtype dt = stream.dtype;
    if (mode == 1) dt = dt == PLX_DTYPE_FLOAT32 ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32;
    if (mode == 2) {
      if (!shape.empty() && byte() % 2) {
        shape.back() += 1;
      } else if (!shape.empty() && byte() % 2) {
        shape.pop_back();
      } else {
        shape.push_back(1 + byte() % 2);
      }
    }
    const size_t n = numel(shape.data(), shape.size());
    if (n == SIZE_MAX) return false;
    d.buffers.push_back(values(dt, n * dtype_size(dt), d.seed));
    d.shapes.push_back(std::move(shape));
    into.push_back({stream.id, dt, d.buffers.back().empty() ? nullptr : d.buffers.back().data(),
                    d.shapes.back().empty() ? nullptr : d.shapes.back().data(), d.shapes.back().size()});
    return true;
  }

  void run(Session& s) {
    if (runs_.size() >= kMaxRuns || runs_started_ >= 2 * kMaxRuns) return;
    ++runs_started_;
    const uint8_t how = byte() % 4;  // 0, 1: plx_session_run; 2: plx_session_run_with; 3: async
    auto d = std::make_unique<RunData>();
    d->seed = byte();
    const uint8_t fail = byte();
    d->fill_status = fail % 16 == 15 ? PLX_ERR_RUNTIME : fail % 16 == 14 ? PLX_ERR_CANCELLED : PLX_OK;
    d->buffers.reserve(64);
    d->shapes.reserve(64);
    for (size_t i = 0; i < s.h2d.size() && i < 8; ++i) {
      const uint8_t mode = byte() % 16;
      if (mode == 14) {
        if (how >= 2) d->callbacks.push_back({s.h2d[i].id, fill, nullptr, d.get()});
        continue;
      }
      host_array(s, s.h2d[i], mode == 12 ? 1 : mode == 13 ? 2 : 0, *d, d->inputs);
      if (mode == 15) host_array(s, s.h2d[i], 0, *d, d->inputs);  // duplicate
    }
    for (size_t i = 0; i < s.d2h.size() && i < 8; ++i) {
      const uint8_t mode = byte() % 8;
      if (mode == 5) continue;
      if (mode == 7 && how >= 2) {
        d->callbacks.push_back({s.d2h[i].id, nullptr, deliver, d.get()});
        continue;
      }
      host_array(s, s.d2h[i], mode == 6 ? 2 : mode == 7 ? 1 : 0, *d, d->outputs);
    }
    const uint8_t extra = byte();
    if (extra % 8 == 7) {  // an array for a stream of the wrong direction, another IR, or none
      Stream bogus{extra / 8 % 2 && !s.d2h.empty() ? s.d2h[0].id : u64() % 64, PLX_DTYPE_FLOAT32};
      host_array(s, bogus, 0, *d, extra / 16 % 2 ? d->outputs : d->inputs);
      if (extra / 16 % 2 == 0 && (d->inputs.empty() || d->inputs.back().stream != bogus.id)) {
        d->inputs.push_back({bogus.id, PLX_DTYPE_FLOAT32, d->buffers.emplace_back(4).data(), nullptr, 0});
      }
    }
    if (extra == 0xFE && !d->callbacks.empty()) d->callbacks[0].fill = nullptr, d->callbacks[0].deliver = nullptr;
    if (tracing()) {
      std::fprintf(stderr, "run (how %d): %zu inputs, %zu outputs, %zu callbacks, fill status %d\n", how,
                   d->inputs.size(), d->outputs.size(), d->callbacks.size(), d->fill_status);
      for (const auto* arrays : {&d->inputs, &d->outputs}) {
        for (const plx_host_array& a : *arrays) {
          std::fprintf(stderr, "  %s stream %llu dtype %d shape [", arrays == &d->inputs ? "input" : "output",
                       static_cast<unsigned long long>(a.stream), a.dtype);
          for (size_t k = 0; k < a.rank; ++k) std::fprintf(stderr, "%lld ", static_cast<long long>(a.shape[k]));
          std::fprintf(stderr, "]\n");
        }
      }
    }
    if (how < 2) {
      CHECK(plx_session_run(s.session, d->inputs.empty() ? nullptr : d->inputs.data(), d->inputs.size(),
                            d->outputs.empty() ? nullptr : d->outputs.data(), d->outputs.size()));
      return;
    }
    plx_run_options ro;
    plx_run_options_init(&ro);
    ro.inputs = d->inputs.empty() ? nullptr : d->inputs.data();
    ro.num_inputs = d->inputs.size();
    ro.outputs = d->outputs.empty() ? nullptr : d->outputs.data();
    ro.num_outputs = d->outputs.size();
    ro.callbacks = d->callbacks.empty() ? nullptr : d->callbacks.data();
    ro.num_callbacks = d->callbacks.size();
    ro.on_complete = extra % 2 ? on_complete : nullptr;
    ro.user_data = d.get();
    if (how == 2) {
      const plx_status st = CHECK(plx_session_run_with(s.session, &ro));
      if (ro.on_complete != nullptr && st != PLX_ERR_INVALID_ARGUMENT && st != PLX_ERR_NOT_FOUND &&
          st != PLX_ERR_SHAPE_MISMATCH && st != PLX_ERR_DTYPE_MISMATCH && d->completions.load() != 1) {
        // A run that started calls on_complete before plx_session_run_with returns.
        if (st == PLX_OK) bug("plx_session_run_with: PLX_OK but on_complete called " + std::to_string(d->completions.load()) + " times");
      }
      return;
    }
    plx_run* r = nullptr;
    if (CHECK(plx_session_run_async(s.session, &ro, &r)) != PLX_OK) return;
    if (r == nullptr) bug("plx_session_run_async: PLX_OK and no run");
    runs_.push_back({r, std::move(d)});
  }

  void wait_run() {
    if (runs_.empty()) return;
    Run& r = pick(runs_);
    const uint8_t b = byte();
    CHECK(plx_run_wait(r.run, b % 4 == 3 ? -1 : b % 4 * 5));
  }

  void destroy_run() {
    if (runs_.empty()) return;
    const size_t i = byte() % runs_.size();
    plx_run_destroy(runs_[i].run);
    runs_.erase(runs_.begin() + static_cast<ptrdiff_t>(i));
  }

  // A variable of the session mostly, else any operand of an IR, as a caller might mix up.
  Variable variable(Session& s) {
    const uint8_t b = byte();
    if (b % 8 < 6 && !s.variables.empty()) return pick(s.variables);
    if (!irs_.empty()) return {operand(pick(irs_)), PLX_DTYPE_FLOAT32};
    return {u64(), PLX_DTYPE_FLOAT32};
  }

  void read_write_variable(Session& s, bool write) {
    const Variable v = variable(s);
    const uint8_t mode = byte();
    int64_t dims[PLX_MAX_RANK + 1] = {};
    size_t rank = 0;
    size_t bytes = 4;
    if (CHECK(plx_session_get_variable_shape(s.session, v.id, dims, PLX_MAX_RANK + 1, &rank)) == PLX_OK) {
      const size_t n = numel(dims, rank);
      if (n == SIZE_MAX) return;
      bytes = n * dtype_size(v.dtype);
    }
    if (mode % 6 == 4 && bytes >= 1) bytes -= 1;
    if (mode % 6 == 5) bytes += 4;
    std::vector<uint8_t> buffer = values(v.dtype, bytes, byte());
    void* ptr = buffer.empty() || mode == 0xFF ? nullptr : buffer.data();
    if (write) {
      CHECK(plx_session_write_variable(s.session, v.id, ptr, bytes));
    } else {
      CHECK(plx_session_read_variable(s.session, v.id, ptr, bytes));
    }
  }

  // An out-struct's storage: struct_size right, too small, or larger (a newer header).
  template <class T>
  struct OutStruct {
    alignas(16) uint8_t storage[sizeof(T) + 64] = {};
    T* get(uint8_t mode) {
      size_t size = sizeof(T);
      if (mode % 4 == 2) size = 8;
      if (mode % 4 == 3) size = sizeof(T) + 64;
      std::memcpy(storage, &size, sizeof(size));
      return reinterpret_cast<T*>(storage);
    }
  };

  void session_query(Session& s) {
    const uint8_t which = byte(), mode = byte();
    switch (which % 11) {
      case 0: {
        OutStruct<plx_stream_stats> o;
        CHECK(plx_session_get_stream_stats(s.session, o.get(mode)));
        break;
      }
      case 1: {
        std::vector<plx_stream> ids;
        for (const Stream& st : s.h2d) ids.push_back(st.id);
        for (const Stream& st : s.d2h) ids.push_back(st.id);
        const plx_stream id = ids.empty() || mode % 4 == 3 ? variable(s).id : ids[mode % ids.size()];
        int64_t dims[PLX_MAX_RANK] = {};
        size_t rank = 0;
        const size_t max_rank = mode / 4 % 4 == 3 ? 0 : PLX_MAX_RANK;
        CHECK(plx_session_get_host_shape(s.session, id, max_rank ? dims : nullptr, max_rank, &rank));
        break;
      }
      case 2: {
        int64_t dims[PLX_MAX_RANK] = {};
        size_t rank = 0;
        CHECK(plx_session_get_variable_shape(s.session, variable(s).id, dims, mode % PLX_MAX_RANK, &rank));
        break;
      }
      case 3: {
        size_t n = 0;
        CHECK(plx_session_get_num_devices(s.session, &n));
        break;
      }
      case 4: {
        OutStruct<plx_variable_storage> o;
        CHECK(plx_session_get_variable_storage(s.session, variable(s).id, o.get(mode)));
        break;
      }
      case 5: {
        OutStruct<plx_memory_stats> o;
        CHECK(plx_session_get_memory_stats(s.session, mode / 4 % 8, o.get(mode)));
        break;
      }
      case 6:
      case 7: {
        const size_t capacity = mode % 4 == 0 ? 0 : mode % 4 == 1 ? 8 : 1 << 16;
        std::vector<char> buffer(capacity);
        size_t size = 0;
        if (which % 11 == 6) {
          CHECK(plx_session_get_report(s.session, capacity ? buffer.data() : nullptr, capacity, &size));
        } else {
          CHECK(plx_session_get_trace(s.session, capacity ? buffer.data() : nullptr, capacity, &size));
        }
        break;
      }
      case 8: {
        OutStruct<plx_replica_info> o;
        CHECK(plx_session_get_replicas(s.session, o.get(mode)));
        break;
      }
      case 9: {
        int64_t step = 0;
        CHECK(plx_session_get_step(s.session, &step));
        break;
      }
      default: {
        const size_t capacity = mode % 2 ? 4096 : 4;
        std::vector<char> buffer(capacity);
        size_t size = 0;
        CHECK(plx_runtime_get_info(buffer.data(), capacity, &size));
        break;
      }
    }
  }

  void checkpoint(Session& s) {
    const uint8_t which = byte(), b = byte();
    const std::string path = temp_dir() + "/ckpt" + std::to_string(b % 3);
    plx_checkpoint_options o;
    plx_checkpoint_options_init(&o);
    o.level = b / 4 % 8 == 7 ? 0 : 1 + b / 4 % 3;
    o.strict = which / 2 % 2;
    const char* names[] = {"epoch"};
    int64_t counters[] = {static_cast<int64_t>(b)};
    if (which / 4 % 2) {
      o.num_counters = 1;
      o.counter_names = names;
      o.counter_values = counters;
    }
    if (which % 2 == 0) {
      CHECK(plx_session_save_checkpoint(s.session, path.c_str(), &o));
    } else {
      CHECK(plx_session_load_checkpoint(s.session, path.c_str(), which / 8 % 2 ? nullptr : &o));
    }
  }

  void destroy_session() {
    if (sessions_.empty()) return;
    const size_t i = byte() % sessions_.size();
    plx_session_destroy(sessions_[i].session);
    sessions_.erase(sessions_.begin() + static_cast<ptrdiff_t>(i));
  }

  void grouping() {
    const uint8_t r = byte(), g = byte(), s = byte(), which = byte(), arg = byte();
    plx_replica_grouping grouping{static_cast<int64_t>(r % 10) - 1, static_cast<int64_t>(g % 6) - 1,
                                  static_cast<int64_t>(s % 5) - 1};
    if (r == 0xFF) grouping.replication_factor = std::numeric_limits<int64_t>::min();
    if (which % 2 == 0) {
      plx_replica_grouping made{};
      if (CHECK(plx_replica_grouping_create(grouping.replication_factor, grouping.group_size, grouping.stride, &made)) ==
          PLX_OK) {
        grouping = made;
      }
    }
    int64_t n = 0;
    int64_t members[16] = {};
    size_t count = 0;
    plx_replica_grouping transposed{};
    switch (which / 2 % 4) {
      case 0: CHECK(plx_replica_grouping_get_num_groups(&grouping, &n)); break;
      case 1: CHECK(plx_replica_grouping_get_members(&grouping, static_cast<int64_t>(arg % 10) - 1, members, arg / 16, &count)); break;
      case 2: CHECK(plx_replica_grouping_get_group(&grouping, static_cast<int64_t>(arg % 10) - 1, &n)); break;
      default: CHECK(plx_replica_grouping_transpose(&grouping, &transposed)); break;
    }
  }

  void step(SequenceOp op) {
    switch (op) {
      case SequenceOp::CreateIr: create_ir(); return;
      case SequenceOp::DestroyIr: destroy_ir(); return;
      case SequenceOp::WaitRun: wait_run(); return;
      case SequenceOp::DestroyRun: destroy_run(); return;
      case SequenceOp::DestroySession: destroy_session(); return;
      case SequenceOp::Grouping: grouping(); return;
      default: break;
    }
    if (op <= SequenceOp::CreateSession) {
      Ir* ir = ir_pick();
      if (ir == nullptr) return;
      switch (op) {
        case SequenceOp::SetReplication: set_replication(*ir); return;
        case SequenceOp::AddVariable: add_variable(*ir); return;
        case SequenceOp::AddConstant: add_constant(*ir); return;
        case SequenceOp::AddH2dStream: add_h2d(*ir); return;
        case SequenceOp::AddD2hStream: add_d2h(*ir); return;
        case SequenceOp::AddOp: add_op(*ir); return;
        case SequenceOp::Autodiff: autodiff(*ir); return;
        case SequenceOp::TensorType: tensor_type(*ir); return;
        case SequenceOp::AddRemoteBuffer: add_remote_buffer(*ir); return;
        case SequenceOp::AddRemoteVariable: add_remote_variable(*ir); return;
        case SequenceOp::Scope: scope(*ir); return;
        case SequenceOp::CreateSession: create_session(*ir); return;
        default: return;
      }
    }
    Session* s = session_pick();
    if (s == nullptr) return;
    switch (op) {
      case SequenceOp::Run: run(*s); return;
      case SequenceOp::ReadVariable: read_write_variable(*s, false); return;
      case SequenceOp::WriteVariable: read_write_variable(*s, true); return;
      case SequenceOp::SessionQuery: session_query(*s); return;
      case SequenceOp::Checkpoint: checkpoint(*s); return;
      case SequenceOp::Cancel: CHECK(plx_session_cancel(s->session)); return;
      default: return;
    }
  }

  // Destroys what is left in an order the input's last bytes choose (a session before or
  // after its IR, runs before or after their session).
  void teardown() {
    while (!irs_.empty() || !sessions_.empty() || !runs_.empty()) {
      const uint8_t b = byte() % 3;
      if (b == 0 && !irs_.empty()) {
        destroy_ir();
      } else if (b == 1 && !sessions_.empty()) {
        destroy_session();
      } else if (!runs_.empty()) {
        destroy_run();
      } else if (!sessions_.empty()) {
        destroy_session();
      } else {
        destroy_ir();
      }
    }
  }

  FuzzInputReader in_;
  size_t size_;
  size_t consumed_ = 0;
  std::vector<Ir> irs_;
  std::vector<Session> sessions_;
  std::vector<Run> runs_;
  std::vector<plx_tensor> dead_ids_;
  std::vector<std::string> strings_;
  size_t sessions_created_ = 0;
  size_t runs_started_ = 0;
};

// The watchdog: a unit that runs longer than kHangSeconds is a hang (a deadlock, a
// collective waiting forever); abort, and libFuzzer keeps the input.
std::atomic<int64_t> unit_started_ms{0};
int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
void watchdog() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const int64_t started = unit_started_ms.load();
    if (started != 0 && now_ms() - started > kHangSeconds * 1000) {
      bug("hang: a unit has run for more than " + std::to_string(kHangSeconds) + " s");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The plugins built next to the fuzzer, and no launcher or collectives choice from the
  // environment.
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  setenv("PLEXUS_PLUGIN_PATH", self.parent_path().c_str(), 1);
  for (const char* v : {"PLEXUS_COLLECTIVES", "PLEXUS_CLUSTER", "TF_CONFIG", "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK", "BLIS_ARCH_TYPE"}) {
    unsetenv(v);
  }
  char dir[] = "/tmp/plexus_sequence_fuzz_XXXXXX";
  if (mkdtemp(dir) == nullptr) bug("mkdtemp failed");
  temp_dir() = dir;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir(), ec);
  });
  load_catalog();
  std::thread(watchdog).detach();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unit_started_ms.store(now_ms());
  {
    Fuzz fuzz(data, size);
    fuzz.run();
  }
  unit_started_ms.store(0);
  return 0;
}
