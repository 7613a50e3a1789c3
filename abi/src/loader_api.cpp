// C API: the data loader (core/data/loader.h) and its fill callbacks.
#include <cstddef>
#include <string>

#include "abi/src/handles.h"
#include "abi/src/struct_size.h"
#include "core/data/text_windows.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

// Runs `body`, prefixing the message of an ir::Error it throws with `where` (the core's
// messages say "loader ..."; the C API's name the function or callback).
template <class F>
void prefixed(const std::string& where, F&& body) {
  try {
    body();
  } catch (const ir::Error& e) {
    ir::fail(e.code(), where + ": " + e.what());
  }
}

// A C boolean option: 0 or 1.
bool to_flag(int32_t value, const char* name) {
  if (value != 0 && value != 1) {
    ir::fail(ir::ErrorCode::InvalidArgument,
             std::string("options->") + name + " is " + std::to_string(value) + ", must be 0 or 1");
  }
  return value == 1;
}

// The caller's options over the defaults: fields past its struct_size keep their defaults.
data::LoaderOptions to_loader_options(const plx_loader_options& options) {
  plx_loader_options defaults;
  plx_loader_options_init(&defaults);
  const plx_loader_options o = abi::read_struct(
      options, defaults, {abi::end_of(&plx_loader_options::workers), abi::end_of(&plx_loader_options::shard_index)},
      "options", "plx_loader_options_init");
  data::LoaderOptions out;
  out.batch_size = o.batch_size;
  out.replicas = o.replicas;
  out.steps_per_run = o.steps_per_run;
  out.shuffle = to_flag(o.shuffle, "shuffle");
  out.seed = o.seed;
  out.mean = o.mean;
  out.std = o.std;
  out.drop_last = to_flag(o.drop_last, "drop_last");
  out.workers = o.workers;
  out.num_shards = o.num_shards;
  out.shard_index = o.shard_index;
  return out;
}

}  // namespace

extern "C" {

// The plx_fill_fn of both streams; user_data is a plx_loader::Feed. Never throws: a failure
// is returned as its status, with the message as this (io) thread's plx_last_error().
static plx_status loader_fill(void* user_data, plx_stream stream, int64_t step, int64_t replica, void* buffer,
                              size_t bytes) {
  return guarded([&] {
    require(user_data, "plx_loader fill callback", "user_data");
    const auto& feed = *static_cast<const plx_loader::Feed*>(user_data);
    prefixed(std::string("plx_loader ") + feed.loader->field(feed.role).name + " callback of stream " + std::to_string(stream),
             [&] { feed.loader->fill(feed.role, step, replica, buffer, bytes); });
  });
}

PLX_API void plx_loader_options_init(plx_loader_options* options) {
  if (options == nullptr) return;
  const data::LoaderOptions d;
  *options = plx_loader_options{};
  options->struct_size = sizeof(plx_loader_options);
  options->batch_size = d.batch_size;
  options->replicas = d.replicas;
  options->steps_per_run = d.steps_per_run;
  options->shuffle = d.shuffle ? 1 : 0;
  options->seed = d.seed;
  options->mean = d.mean;
  options->std = d.std;
  options->drop_last = d.drop_last ? 1 : 0;
  options->workers = d.workers;
  options->num_shards = d.num_shards;
  options->shard_index = d.shard_index;
}

PLX_API plx_status plx_loader_create(const plx_dataset* dataset, const plx_loader_options* options,
                                     plx_loader** out_loader) {
  return guarded([&] {
    require(dataset, "plx_loader_create", "dataset");
    require(options, "plx_loader_create", "options");
    require(out_loader, "plx_loader_create", "out_loader");
    prefixed("plx_loader_create", [&] { *out_loader = new plx_loader(dataset->data, to_loader_options(*options)); });
  });
}

PLX_API plx_status plx_loader_create_text(const plx_text* text, int32_t split, int64_t context,
                                          const plx_loader_options* options, plx_loader** out_loader) {
  return guarded([&] {
    require(text, "plx_loader_create_text", "text");
    require(options, "plx_loader_create_text", "options");
    require(out_loader, "plx_loader_create_text", "out_loader");
    const std::string& bytes = abi::text_split(*text, split, "plx_loader_create_text");
    const char* name = split == PLX_TEXT_TRAIN ? "training split" : "validation split";
    prefixed("plx_loader_create_text", [&] {
      *out_loader = new plx_loader(std::make_unique<data::TextWindows>(bytes, context, name), to_loader_options(*options));
    });
  });
}

PLX_API void plx_loader_destroy(plx_loader* loader) { delete loader; }

PLX_API plx_status plx_loader_get_runs_per_epoch(const plx_loader* loader, int64_t* out_runs) {
  return guarded([&] {
    require(loader, "plx_loader_get_runs_per_epoch", "loader");
    require(out_runs, "plx_loader_get_runs_per_epoch", "out_runs");
    *out_runs = loader->loader.runs_per_epoch();
  });
}

PLX_API plx_status plx_loader_begin_run(plx_loader* loader, int64_t epoch, int64_t run) {
  return guarded([&] {
    require(loader, "plx_loader_begin_run", "loader");
    prefixed("plx_loader_begin_run", [&] { loader->loader.begin_run(epoch, run); });
  });
}

PLX_API plx_status plx_loader_get_callbacks(plx_loader* loader, plx_stream images, plx_stream labels,
                                            plx_stream_callback* out_callbacks) {
  return guarded([&] {
    require(loader, "plx_loader_get_callbacks", "loader");
    require(out_callbacks, "plx_loader_get_callbacks", "out_callbacks");
    out_callbacks[0] = plx_stream_callback{images, loader_fill, nullptr, &loader->images};
    out_callbacks[1] = plx_stream_callback{labels, loader_fill, nullptr, &loader->labels};
  });
}

}  // extern "C"
