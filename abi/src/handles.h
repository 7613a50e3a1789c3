// Handle structs behind the C API's opaque types, id encoding, and the one place where
// core exceptions become plx_status codes.
#pragma once

#include <plexus/plexus.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>
#include <string>

#include "core/session/async_saver.h"
#include "core/data/idx_reader.h"
#include "core/data/loader.h"
#include "core/data/text_corpus.h"
#include "core/ir/error.h"
#include "core/ir/graph.h"
#include "core/session/session.h"

struct plx_ir {
  plexus::ir::Graph graph;
};

struct plx_session {
  std::unique_ptr<plexus::session::Session> session;
  /// Asynchronous checkpoint saves, made by the first one; destroyed (waiting for pending
  /// saves) before the session.
  std::mutex saver_mutex;
  std::unique_ptr<plexus::session::AsyncSaver> saver;
};

struct plx_run {
  std::shared_ptr<plexus::runtime::RunHandle> handle;
};

struct plx_dataset {
  plexus::data::IdxDataset data;
};

struct plx_text {
  plexus::data::TextCorpus corpus;
};

/// A loader and the user_data of its two fill callbacks (abi/src/loader_api.cpp).
struct plx_loader {
  /// What a fill callback serves: one role of one loader.
  struct Feed {
    plexus::data::Loader* loader;
    plexus::data::LoaderRole role;
  };
  plx_loader(const plexus::data::IdxDataset& dataset, const plexus::data::LoaderOptions& options)
      : loader(dataset, options) {}
  /// Serves `source`, which the loader owns (windows of a plx_text).
  plx_loader(std::unique_ptr<const plexus::data::SampleSource> owned, const plexus::data::LoaderOptions& options)
      : source(std::move(owned)), loader(*source, options) {}
  std::unique_ptr<const plexus::data::SampleSource> source;  ///< null for an IDX dataset's loader
  plexus::data::Loader loader;
  Feed images{&loader, plexus::data::LoaderRole::Images};
  Feed labels{&loader, plexus::data::LoaderRole::Labels};
};

namespace plexus::abi {

/// The bytes of `split` of `text`; throws InvalidArgument, naming `function`, for a value
/// that is no plx_text_split (abi/src/text_api.cpp).
const std::string& text_split(const plx_text& text, int32_t split, const char* function);

/// Records `message` as this thread's last error and returns `status`.
plx_status set_error(plx_status status, const std::string& message) noexcept;

/// The status and message of an exception (ir::Error keeps its code; anything else is
/// PLX_ERR_INTERNAL). A null `error` is PLX_OK with an empty message.
plx_status describe(std::exception_ptr error, std::string& message) noexcept;

/// Runs `body`, translating every exception into a status and last-error message.
template <class F>
plx_status guarded(F&& body) noexcept {
  try {
    body();
    return PLX_OK;
  } catch (...) {
    std::string message;
    const plx_status status = describe(std::current_exception(), message);
    return set_error(status, message);
  }
}

/// Throws InvalidArgument "<function>: <what> is NULL" when `p` is null.
void require(const void* p, const char* function, const char* what);

// Ids: high 32 bits = the IR's tag, low 32 bits = the object's kind (bits 30-31: tensor,
// remote buffer, stream, graph object) and index. Decoding checks kind, IR and range, naming `what`.
plx_tensor encode_tensor(const ir::Graph& g, ir::TensorId id);
plx_stream encode_stream(const ir::Graph& g, ir::StreamId id);
plx_remote_buffer encode_remote_buffer(const ir::Graph& g, ir::RemoteBufferId id);
ir::TensorId decode_tensor(const ir::Graph& g, plx_tensor id, const std::string& what);
ir::StreamId decode_stream(const ir::Graph& g, plx_stream id, const std::string& what);
ir::RemoteBufferId decode_remote_buffer(const ir::Graph& g, plx_remote_buffer id, const std::string& what);
// Graph objects: kind bits 3; a call site has bit 29 set too. The main graph is index 0,
// so its id is never 0 (the IR's tag is in the high half).
plx_graph encode_graph(const ir::Graph& g, ir::GraphId id);
plx_call_site encode_call_site(const ir::Graph& g, int32_t id);
ir::GraphId decode_graph(const ir::Graph& g, plx_graph id, const std::string& what);
int32_t decode_call_site(const ir::Graph& g, plx_call_site id, const std::string& what);

/// Options of a variable from C (NULL = defaults), checked.
struct VariableOptions {
  std::optional<ir::ReplicaGrouping> grouping;
  ir::RetrievalMode retrieval = ir::RetrievalMode::OnePerGroup;
  int64_t shard_over = 0;
};
VariableOptions to_variable_options(const plx_variable_options* options, const std::string& what);

/// A copy of `bytes` of host data (`data` may be NULL only when bytes is 0).
std::vector<std::byte> copy_bytes(const void* data, size_t bytes);

ir::DType to_dtype(plx_dtype dtype, const std::string& what);

/// The core's view of a caller's host arrays: each stream id decoded, dtype and shape
/// checked; errors name "<function> <what>[i]" and the stream. `arrays` may be NULL only
/// when count is 0. The data stays the caller's (borrowed).
std::vector<runtime::HostArray> to_arrays(const ir::Graph& g, const plx_host_array* arrays, size_t count,
                                          const char* function, const std::string& what);
ir::Shape to_shape(const int64_t* shape, size_t rank, const std::string& what);

/// Copies `shape` into a caller's buffer: BufferTooSmall when it does not fit (out_rank
/// is still set). A NULL out_shape asks for the rank only.
void copy_shape(const ir::Shape& shape, int64_t* out_shape, size_t max_rank, size_t* out_rank);

/// A grouping from C values: group_size 0 means R / stride (PopXL's default).
ir::ReplicaGrouping make_grouping(int64_t replication_factor, int64_t group_size, int64_t stride);

/// Copies `text` with its NUL into a caller's buffer, same protocol as copy_shape.
void copy_text(const std::string& text, char* buffer, size_t capacity, size_t* out_size);

}  // namespace plexus::abi
