#include "core/checkpoint/manifest.h"

#include <algorithm>
#include <limits>
#include <set>
#include <type_traits>

#include "core/ir/error.h"

namespace plexus::checkpoint {

namespace {

using nlohmann::json;

constexpr const char* kKinds[] = {"variable", "remote_variable", "remote_buffer_slot"};

[[noreturn]] void bad(const std::string& what, const std::string& message) {
  ir::fail(ir::ErrorCode::BadFormat, what + ": " + message);
}

ir::DType dtype_of(const std::string& name, const std::string& what) {
  for (ir::DType t : ir::kAllDTypes) {
    if (ir::dtype_name(t) == name) return t;
  }
  bad(what, "unknown dtype '" + name + "'");
}

// True when every number in `j` is an integer (nlohmann's get<int64_t>() of a float is a
// plain cast: undefined behaviour out of range, truncation within it).
bool integers_only(const json& j) {
  if (j.is_number()) return j.is_number_integer();
  if (j.is_structured()) {
    for (const json& x : j) {
      if (!integers_only(x)) return false;
    }
  }
  return true;
}

// A field of `j` of type T, or a BadFormat error naming it.
template <class T>
T field(const json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) bad(what, std::string("missing field '") + key + "'");
  if constexpr (!std::is_same_v<T, json>) {
    if (!integers_only(*it)) bad(what, std::string("field '") + key + "' has the wrong type");
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    bad(what, std::string("field '") + key + "' has the wrong type");
  }
}

int64_t positive(const json& j, const char* key, const std::string& what) {
  const auto v = field<int64_t>(j, key, what);
  if (v < 1) bad(what, std::string("field '") + key + "' must be >= 1, is " + std::to_string(v));
  return v;
}

TensorEntry parse_entry(const json& j, const std::string& file) {
  if (!j.is_object()) bad(file, "a tensors[] entry is not an object");
  TensorEntry e;
  e.name = field<std::string>(j, "name", file + ": a tensors[] entry");
  const std::string what = file + ": tensor '" + e.name + "'";
  e.kind = field<std::string>(j, "kind", what);
  if (std::find(std::begin(kKinds), std::end(kKinds), e.kind) == std::end(kKinds)) bad(what, "unknown kind '" + e.kind + "'");
  e.dtype = dtype_of(field<std::string>(j, "dtype", what), what);
  e.shape = field<ir::Shape>(j, "shape", what);
  uint64_t numel = 1;
  for (int64_t d : e.shape) {
    if (d < 1) bad(what, "shape " + ir::shape_string(e.shape) + " has a dim < 1");
    if (numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) bad(what, "shape overflows");
    numel *= static_cast<uint64_t>(d);
  }
  e.rows = positive(j, "rows", what);
  e.group_size = positive(j, "group_size", what);
  e.group_stride = positive(j, "group_stride", what);
  e.retrieval = field<std::string>(j, "retrieval", what);
  if (e.retrieval != "one_per_group" && e.retrieval != "all_replicas") bad(what, "unknown retrieval mode '" + e.retrieval + "'");
  e.shard_over = positive(j, "shard_over", what);
  e.padding = field<int64_t>(j, "padding", what);
  if (e.padding < 0 || e.padding >= e.shard_over) bad(what, "padding " + std::to_string(e.padding) + " is not in [0, shard_over)");
  e.shuffle = field<bool>(j, "shuffle", what);
  e.offset = field<uint64_t>(j, "offset", what);
  e.size = field<uint64_t>(j, "size", what);
  const auto crc = field<uint64_t>(j, "crc32", what);
  if (crc > std::numeric_limits<uint32_t>::max()) bad(what, "crc32 " + std::to_string(crc) + " does not fit 32 bits");
  e.crc32 = static_cast<uint32_t>(crc);
  if (numel > std::numeric_limits<uint64_t>::max() / 8 / static_cast<uint64_t>(e.rows)) bad(what, "size overflows");
  const uint64_t stored = field<uint64_t>(j, "uncompressed_size", what);
  if (stored != e.bytes()) {
    bad(what, "uncompressed_size " + std::to_string(stored) + " does not match rows x shape x dtype (" +
                  std::to_string(e.bytes()) + " bytes)");
  }
  return e;
}

}  // namespace

TensorEntry TensorEntry::variable(std::string name, ir::DType dtype, ir::Shape shape, int64_t rows, bool shuffle) {
  TensorEntry e;
  e.name = std::move(name);
  e.kind = "variable";
  e.dtype = dtype;
  e.shape = std::move(shape);
  e.rows = rows;
  e.shuffle = shuffle;
  return e;
}

uint64_t TensorEntry::bytes() const {
  uint64_t n = static_cast<uint64_t>(rows) * ir::dtype_size(dtype);
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string to_json(const Manifest& m) {
  // Built in place: nlohmann's initializer lists copy every value once more, and a save
  // serialises the manifest twice (checkpoint_file.cpp).
  json j = json::object();
  j["replication_factor"] = m.replication_factor;
  j["step"] = m.step;
  j["counters"] = m.counters;
  j["options"] = m.options;
  json& tensors = j["tensors"] = json::array();
  tensors.get_ref<json::array_t&>().reserve(m.tensors.size());
  for (const TensorEntry& e : m.tensors) {
    json& t = tensors.emplace_back(json::object());
    t["name"] = e.name;
    t["kind"] = e.kind;
    t["dtype"] = std::string(ir::dtype_name(e.dtype));
    t["shape"] = e.shape;
    t["rows"] = e.rows;
    t["group_size"] = e.group_size;
    t["group_stride"] = e.group_stride;
    t["retrieval"] = e.retrieval;
    t["shard_over"] = e.shard_over;
    t["padding"] = e.padding;
    t["shuffle"] = e.shuffle;
    t["offset"] = e.offset;
    t["size"] = e.size;
    t["uncompressed_size"] = e.bytes();
    t["crc32"] = e.crc32;
  }
  try {
    return j.dump();
  } catch (const json::type_error& e) {  // names are bytes in the IR; JSON strings must be UTF-8
    ir::fail(ir::ErrorCode::InvalidArgument, std::string("checkpoint: a tensor or counter name is not valid UTF-8 (") +
                                                 e.what() + ")");
  }
}

Manifest parse_manifest(std::string_view text, uint64_t data_begin, uint64_t file_size, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    bad(what, std::string("the manifest is not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) bad(what, "the manifest is not a JSON object");
  Manifest m;
  m.replication_factor = positive(j, "replication_factor", what + ": manifest");
  m.step = field<int64_t>(j, "step", what + ": manifest");
  m.counters = field<std::map<std::string, int64_t>>(j, "counters", what + ": manifest");
  m.options = field<json>(j, "options", what + ": manifest");
  const json tensors = field<json>(j, "tensors", what + ": manifest");
  if (!tensors.is_array()) bad(what, "manifest field 'tensors' is not an array");
  std::set<std::string> names;
  for (const json& t : tensors) {
    TensorEntry e = parse_entry(t, what);
    if (!names.insert(e.name).second) bad(what, "tensor '" + e.name + "' appears twice in the manifest");
    if (e.offset < data_begin || e.size == 0 || e.offset > file_size || e.size > file_size - e.offset) {
      bad(what, "tensor '" + e.name + "': its frame [" + std::to_string(e.offset) + ", +" + std::to_string(e.size) +
                    ") is outside the data section [" + std::to_string(data_begin) + ", " + std::to_string(file_size) + ")");
    }
    m.tensors.push_back(std::move(e));
  }
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& e : m.tensors) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i - 1]->offset + by_offset[i - 1]->size > by_offset[i]->offset) {
      bad(what, "the frames of tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");
    }
  }
  return m;
}

}  // namespace plexus::checkpoint
