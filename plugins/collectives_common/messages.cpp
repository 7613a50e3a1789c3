#include "collectives_common/messages.h"

#include <algorithm>
#include <cstring>

namespace plexus::collectives {

const char* collective_name(Collective kind) {
  switch (kind) {
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::all_gather:
      return "all_gather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::broadcast:
      return "broadcast";
    case Collective::barrier:
      return "barrier";
  }
  return "collective";
}

std::string dtype_name(plx_dtype dtype) {
  switch (dtype) {
    case PLX_DTYPE_FLOAT32:
      return "float32";
    case PLX_DTYPE_INT32:
      return "int32";
    default:
      return "dtype " + std::to_string(dtype);
  }
}

std::string op_name(plx_reduce_op op) {
  switch (op) {
    case PLX_REDUCE_SUM:
      return "sum";
    case PLX_REDUCE_MEAN:
      return "mean";
    case PLX_REDUCE_MAX:
      return "max";
    case PLX_REDUCE_MIN:
      return "min";
    default:
      return "op " + std::to_string(op);
  }
}

std::string buffer_kind_name(plx_buffer_kind kind) {
  switch (kind) {
    case PLX_BUFFER_DEVICE:
      return "device buffers";
    case PLX_BUFFER_HOST:
      return "host buffers";
    default:
      return "buffer kind " + std::to_string(kind);
  }
}

namespace {

constexpr size_t kMaxListed = 32;

std::string join(std::span<const int64_t> values) {
  std::string text;
  const size_t shown = std::min(values.size(), kMaxListed);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) text += ',';
    text += std::to_string(values[i]);
  }
  if (shown < values.size()) text += ",... (" + std::to_string(values.size()) + " in all)";
  return text;
}

}  // namespace

std::string format_members(std::span<const int64_t> members) { return "{" + join(members) + "}"; }

std::string format_replicas(std::span<const int64_t> replicas) {
  return (replicas.size() == 1 ? "replica " : "replicas ") + join(replicas);
}

std::string call_prefix(Collective kind, std::span<const int64_t> members) {
  return std::string(collective_name(kind)) + " on group " + format_members(members);
}

void write_message(char* out, size_t capacity, std::string_view text) noexcept {
  if (out == nullptr || capacity == 0) return;
  size_t length = std::min(text.size(), capacity - 1);
  if (length < text.size()) {
    // Back off to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx).
    while (length > 0 && (static_cast<unsigned char>(text[length]) & 0xC0) == 0x80) --length;
  }
  std::memcpy(out, text.data(), length);
  out[length] = '\0';
}

}  // namespace plexus::collectives
