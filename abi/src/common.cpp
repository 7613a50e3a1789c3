// Status names, last-error storage, argument checks and id encoding shared by the API.
#include <algorithm>
#include <cstring>

#include "abi/src/handles.h"
#include "abi/src/struct_size.h"

namespace plexus::abi {

namespace {
thread_local std::string last_error;
// Largest element count of a shape: its byte size (elements * 8 at most) fits in int64_t.
constexpr int64_t kMaxElements = int64_t{1} << 60;
}  // namespace

plx_status set_error(plx_status status, const std::string& message) noexcept {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();
  }
  return status;
}

void require(const void* p, const char* function, const char* what) {
  if (p == nullptr) ir::fail(ir::ErrorCode::InvalidArgument, std::string(function) + ": " + what + " is NULL");
}

namespace {

// The kind of object an id names, in bits 30-31 of its low half. Kind bits 3 name graph
// objects: a graph, or a call site when bit 29 is set too (IdKind::CallSite); their bit 28
// is always clear (indices below 2^28), so that all-ones garbage is no id.
enum class IdKind : uint32_t { Tensor = 0, Stream = 2, RemoteBuffer = 1, Graph = 3, CallSite = 7 };
constexpr uint32_t kKindShift = 30;
constexpr uint32_t kIndexMask = (uint32_t{1} << kKindShift) - 1;
constexpr uint32_t kCallSiteBit = uint32_t{1} << 29;
constexpr uint32_t kGraphReservedBit = uint32_t{1} << 28;

const char* kind_name(IdKind k) {
  switch (k) {
    case IdKind::Tensor:
      return "tensor";
    case IdKind::Stream:
      return "stream";
    case IdKind::RemoteBuffer:
      return "remote buffer";
    case IdKind::Graph:
      return "graph";
    case IdKind::CallSite:
      return "call site";
  }
  return "unknown";
}

IdKind kind_of(uint32_t low) {
  const uint32_t bits = low >> kKindShift;
  if (bits == 3 && (low & kCallSiteBit) != 0) return IdKind::CallSite;
  return static_cast<IdKind>(bits);
}

uint64_t encode(const ir::Graph& g, IdKind kind, int32_t index) {
  const uint32_t bits = kind == IdKind::CallSite ? (3u << kKindShift) | kCallSiteBit : static_cast<uint32_t>(kind) << kKindShift;
  return (uint64_t{g.tag()} << 32) | bits | static_cast<uint32_t>(index);
}

int32_t decode(const ir::Graph& g, uint64_t id, IdKind kind, const std::string& what, size_t count) {
  const char* name = kind_name(kind);
  const auto tag = static_cast<uint32_t>(id >> 32);
  const auto low = static_cast<uint32_t>(id);
  if (id == 0) ir::fail(ir::ErrorCode::InvalidArgument, what + ": " + name + " id 0 is not a valid id");
  // IR tags start at 1, and graph objects keep bit 28 clear: anything else is no id at
  // all (garbage, an index, a handle cast to an id), not one of another kind.
  if (tag == 0 || ((low >> kKindShift) == 3 && (low & kGraphReservedBit) != 0)) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + ": " + std::to_string(id) + " is not a " + name +
                                                 " id (ids are the values the plx_ir_* calls return)");
  }
  const IdKind actual = kind_of(low);
  if (actual != kind) {
    ir::fail(ir::ErrorCode::InvalidArgument,
             what + ": id " + std::to_string(id) + " is a " + kind_name(actual) + " id, not a " + name + " id");
  }
  if (tag != g.tag()) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + ": " + name + " id " + std::to_string(id) +
                                                 " belongs to another IR (IR #" + std::to_string(tag) + ", not #" +
                                                 std::to_string(g.tag()) + ")");
  }
  const uint32_t index = low & kIndexMask & (kind == IdKind::CallSite ? ~kCallSiteBit : kIndexMask);
  if (index >= count) {
    ir::fail(ir::ErrorCode::NotFound, what + ": " + name + " id " + std::to_string(id) + " does not exist in this IR");
  }
  return static_cast<int32_t>(index);
}

}  // namespace

plx_tensor encode_tensor(const ir::Graph& g, ir::TensorId id) { return encode(g, IdKind::Tensor, id); }
plx_stream encode_stream(const ir::Graph& g, ir::StreamId id) { return encode(g, IdKind::Stream, id); }
plx_remote_buffer encode_remote_buffer(const ir::Graph& g, ir::RemoteBufferId id) {
  return encode(g, IdKind::RemoteBuffer, id);
}

ir::TensorId decode_tensor(const ir::Graph& g, plx_tensor id, const std::string& what) {
  return decode(g, id, IdKind::Tensor, what, g.num_tensors());
}

ir::StreamId decode_stream(const ir::Graph& g, plx_stream id, const std::string& what) {
  return decode(g, id, IdKind::Stream, what, g.num_streams());
}

ir::RemoteBufferId decode_remote_buffer(const ir::Graph& g, plx_remote_buffer id, const std::string& what) {
  return decode(g, id, IdKind::RemoteBuffer, what, g.remote_buffers().size());
}

plx_graph encode_graph(const ir::Graph& g, ir::GraphId id) { return encode(g, IdKind::Graph, id); }
plx_call_site encode_call_site(const ir::Graph& g, int32_t id) { return encode(g, IdKind::CallSite, id); }

ir::GraphId decode_graph(const ir::Graph& g, plx_graph id, const std::string& what) {
  return decode(g, id, IdKind::Graph, what, g.num_graphs());
}

int32_t decode_call_site(const ir::Graph& g, plx_call_site id, const std::string& what) {
  return decode(g, id, IdKind::CallSite, what, g.num_call_sites());
}

std::vector<std::byte> copy_bytes(const void* data, size_t bytes) {
  std::vector<std::byte> out(bytes);
  if (bytes) std::memcpy(out.data(), data, bytes);
  return out;
}

VariableOptions to_variable_options(const plx_variable_options* options, const std::string& what) {
  VariableOptions out;
  if (options == nullptr) return out;
  plx_variable_options defaults;
  plx_variable_options_init(&defaults);
  const plx_variable_options o =
      read_struct(*options, defaults,
                  {end_of(&plx_variable_options::retrieval_mode), end_of(&plx_variable_options::shard_over)},
                  what + ": options", "plx_variable_options_init");
  if (o.grouping != nullptr) out.grouping = make_grouping(o.grouping->replication_factor, o.grouping->group_size,
                                                          o.grouping->stride);
  out.retrieval = static_cast<ir::RetrievalMode>(o.retrieval_mode);
  out.shard_over = o.shard_over;
  return out;
}

std::vector<runtime::HostArray> to_arrays(const ir::Graph& g, const plx_host_array* arrays, size_t count,
                                          const char* function, const std::string& what) {
  if (count > 0) require(arrays, function, what.c_str());
  std::vector<runtime::HostArray> out;
  for (size_t i = 0; i < count; ++i) {
    const plx_host_array& a = arrays[i];
    const std::string label = std::string(function) + " " + what + "[" + std::to_string(i) + "]";
    const ir::StreamId s = decode_stream(g, a.stream, label);
    const std::string named = label + " (stream '" + g.stream(s).name + "')";
    out.push_back({s, a.data, to_dtype(a.dtype, named), to_shape(a.shape, a.rank, named)});
  }
  return out;
}

ir::DType to_dtype(plx_dtype dtype, const std::string& what) {
  if (!ir::is_valid_dtype(dtype)) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + ": dtype " + std::to_string(dtype) +
                                                 " is not a PLX_DTYPE_* value");
  }
  return static_cast<ir::DType>(dtype);
}

ir::Shape to_shape(const int64_t* shape, size_t rank, const std::string& what) {
  if (rank > ir::kMaxRank) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + ": rank " + std::to_string(rank) + " exceeds PLX_MAX_RANK (" +
                                                 std::to_string(ir::kMaxRank) + ")");
  }
  if (rank > 0 && shape == nullptr) ir::fail(ir::ErrorCode::InvalidArgument, what + ": shape is NULL but rank is " + std::to_string(rank));
  ir::Shape out(shape, shape + rank);
  // A dim < 1 is the core's to report; a product of dims that would overflow byte counts
  // (or wrap around to a small size) is refused here.
  if (std::any_of(out.begin(), out.end(), [](int64_t d) { return d < 1; })) return out;
  int64_t elements = 1;
  for (int64_t d : out) {
    if (__builtin_mul_overflow(elements, d, &elements) || elements > kMaxElements) {
      ir::fail(ir::ErrorCode::InvalidArgument, what + ": shape " + ir::shape_string(out) +
                                                   " has too many elements (more than 2^60)");
    }
  }
  return out;
}

void copy_shape(const ir::Shape& shape, int64_t* out_shape, size_t max_rank, size_t* out_rank) {
  if (out_rank) *out_rank = shape.size();
  if (out_shape == nullptr) return;  // the caller only asks for the rank
  if (shape.size() > max_rank) {
    ir::fail(ir::ErrorCode::BufferTooSmall, "shape has rank " + std::to_string(shape.size()) +
                                                " but the buffer holds " + std::to_string(max_rank) + " dims");
  }
  if (!shape.empty()) {
    std::memcpy(out_shape, shape.data(), shape.size() * sizeof(int64_t));
  }
}

plx_status describe(std::exception_ptr error, std::string& message) noexcept {
  message.clear();
  if (!error) return PLX_OK;
  try {
    std::rethrow_exception(error);
  } catch (const ir::Error& e) {
    message = e.what();
    return static_cast<plx_status>(e.code());
  } catch (const std::bad_alloc&) {
    message = "out of host memory";
  } catch (const std::exception& e) {
    message = std::string("internal error: ") + e.what();
  } catch (...) {
    message = "internal error: unknown exception";
  }
  return PLX_ERR_INTERNAL;
}

void copy_text(const std::string& text, char* buffer, size_t capacity, size_t* out_size) {
  if (out_size) *out_size = text.size() + 1;
  if (capacity < text.size() + 1) {
    ir::fail(ir::ErrorCode::BufferTooSmall, "text needs " + std::to_string(text.size() + 1) + " bytes, buffer has " +
                                                std::to_string(capacity));
  }
  std::memcpy(buffer, text.c_str(), text.size() + 1);
}

}  // namespace plexus::abi

extern "C" {

PLX_API const char* plx_last_error(void) { return plexus::abi::last_error.c_str(); }

PLX_API uint32_t plx_version(void) { return PLX_API_VERSION; }

PLX_API const char* plx_status_name(plx_status status) {
  switch (status) {
    case PLX_OK: return "PLX_OK";
    case PLX_ERR_INVALID_ARGUMENT: return "PLX_ERR_INVALID_ARGUMENT";
    case PLX_ERR_UNKNOWN_OP: return "PLX_ERR_UNKNOWN_OP";
    case PLX_ERR_SHAPE_MISMATCH: return "PLX_ERR_SHAPE_MISMATCH";
    case PLX_ERR_DTYPE_MISMATCH: return "PLX_ERR_DTYPE_MISMATCH";
    case PLX_ERR_NOT_FOUND: return "PLX_ERR_NOT_FOUND";
    case PLX_ERR_OUT_OF_DEVICE_MEMORY: return "PLX_ERR_OUT_OF_DEVICE_MEMORY";
    case PLX_ERR_INVALID_GROUPING: return "PLX_ERR_INVALID_GROUPING";
    case PLX_ERR_IO: return "PLX_ERR_IO";
    case PLX_ERR_BAD_FORMAT: return "PLX_ERR_BAD_FORMAT";
    case PLX_ERR_RUNTIME: return "PLX_ERR_RUNTIME";
    case PLX_ERR_PLUGIN: return "PLX_ERR_PLUGIN";
    case PLX_ERR_TIMEOUT: return "PLX_ERR_TIMEOUT";
    case PLX_ERR_CANCELLED: return "PLX_ERR_CANCELLED";
    case PLX_ERR_UNSUPPORTED: return "PLX_ERR_UNSUPPORTED";
    case PLX_ERR_BUFFER_TOO_SMALL: return "PLX_ERR_BUFFER_TOO_SMALL";
    case PLX_ERR_STILL_RUNNING: return "PLX_ERR_STILL_RUNNING";
    case PLX_ERR_INTERNAL: return "PLX_ERR_INTERNAL";
    default: return "PLX_ERR_UNKNOWN_STATUS";
  }
}

}  // extern "C"

namespace {
using plexus::ir::ErrorCode;
static_assert(static_cast<int>(ErrorCode::InvalidArgument) == PLX_ERR_INVALID_ARGUMENT);
static_assert(static_cast<int>(ErrorCode::UnknownOp) == PLX_ERR_UNKNOWN_OP);
static_assert(static_cast<int>(ErrorCode::ShapeMismatch) == PLX_ERR_SHAPE_MISMATCH);
static_assert(static_cast<int>(ErrorCode::DTypeMismatch) == PLX_ERR_DTYPE_MISMATCH);
static_assert(static_cast<int>(ErrorCode::NotFound) == PLX_ERR_NOT_FOUND);
static_assert(static_cast<int>(ErrorCode::OutOfDeviceMemory) == PLX_ERR_OUT_OF_DEVICE_MEMORY);
static_assert(static_cast<int>(ErrorCode::InvalidGrouping) == PLX_ERR_INVALID_GROUPING);
static_assert(static_cast<int>(ErrorCode::Io) == PLX_ERR_IO);
static_assert(static_cast<int>(ErrorCode::BadFormat) == PLX_ERR_BAD_FORMAT);
static_assert(static_cast<int>(ErrorCode::Runtime) == PLX_ERR_RUNTIME);
static_assert(static_cast<int>(ErrorCode::Plugin) == PLX_ERR_PLUGIN);
static_assert(static_cast<int>(ErrorCode::Timeout) == PLX_ERR_TIMEOUT);
static_assert(static_cast<int>(ErrorCode::Cancelled) == PLX_ERR_CANCELLED);
static_assert(static_cast<int>(ErrorCode::Unsupported) == PLX_ERR_UNSUPPORTED);
static_assert(static_cast<int>(ErrorCode::BufferTooSmall) == PLX_ERR_BUFFER_TOO_SMALL);
static_assert(static_cast<int>(ErrorCode::StillRunning) == PLX_ERR_STILL_RUNNING);
static_assert(static_cast<int>(ErrorCode::Internal) == PLX_ERR_INTERNAL);
static_assert(static_cast<int>(plexus::ir::DType::Float32) == PLX_DTYPE_FLOAT32);
static_assert(static_cast<int>(plexus::ir::DType::Int32) == PLX_DTYPE_INT32);
static_assert(static_cast<int>(plexus::ir::DType::UInt8) == PLX_DTYPE_UINT8);
static_assert(static_cast<int>(plexus::ir::DType::Float16) == PLX_DTYPE_FLOAT16);
static_assert(static_cast<int>(plexus::ir::DType::Int8) == PLX_DTYPE_INT8);
static_assert(static_cast<int>(plexus::ir::DType::UInt32) == PLX_DTYPE_UINT32);
static_assert(static_cast<int>(plexus::ir::DType::Bool) == PLX_DTYPE_BOOL);
static_assert(PLX_MAX_RANK == plexus::ir::kMaxRank);
}  // namespace
