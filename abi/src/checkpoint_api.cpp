// C API: checkpoints (docs/design.md "Checkpoints"; core/checkpoint).
#include "abi/src/handles.h"
#include "abi/src/struct_size.h"
#include "core/session/async_saver.h"
#include "core/session/session_checkpoint.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

constexpr size_t kDefaultStagingBytes = size_t{1} << 30;

// The caller's options over the defaults (NULL: the defaults), counters checked.
plx_checkpoint_options options_or_defaults(const plx_checkpoint_options* options, const char* fn) {
  plx_checkpoint_options o;
  plx_checkpoint_options_init(&o);
  if (options == nullptr) return o;
  o = abi::read_struct(*options, o, {abi::end_of(&plx_checkpoint_options::staging_bytes)}, std::string(fn) + ": options",
                       "plx_checkpoint_options_init");
  if (o.num_counters > 0) {
    require(o.counter_names, fn, "options->counter_names");
    require(o.counter_values, fn, "options->counter_values");
    for (size_t i = 0; i < o.num_counters; ++i) {
      require(o.counter_names[i], fn, ("options->counter_names[" + std::to_string(i) + "]").c_str());
    }
  }
  return o;
}

session::SaveOptions to_save(const plx_checkpoint_options& o, const char* fn) {
  session::SaveOptions s;
  s.write.level = o.level;
  s.write.threads = o.threads;
  if (o.level < 1 || o.level > 19) {
    ir::fail(ir::ErrorCode::InvalidArgument, std::string(fn) + ": options->level " + std::to_string(o.level) + " is not in 1 .. 19");
  }
  if (o.threads < 1) {
    ir::fail(ir::ErrorCode::InvalidArgument, std::string(fn) + ": options->threads " + std::to_string(o.threads) + " must be >= 1");
  }
  switch (o.shuffle) {
    case PLX_SHUFFLE_AUTO:
      s.shuffle = session::Shuffle::Auto;
      break;
    case PLX_SHUFFLE_OFF:
      s.shuffle = session::Shuffle::Off;
      break;
    case PLX_SHUFFLE_ON:
      s.shuffle = session::Shuffle::On;
      break;
    default:
      ir::fail(ir::ErrorCode::InvalidArgument, std::string(fn) + ": options->shuffle " + std::to_string(o.shuffle) +
                                                   " is not a plx_shuffle (0 auto, 1 off, 2 on)");
  }
  for (size_t i = 0; i < o.num_counters; ++i) s.counters[o.counter_names[i]] = o.counter_values[i];
  return s;
}

std::string path_of(const char* path, const char* fn) {
  require(path, fn, "path");
  if (*path == '\0') ir::fail(ir::ErrorCode::InvalidArgument, std::string(fn) + ": path is empty");
  return path;
}

}  // namespace

extern "C" {

PLX_API void plx_checkpoint_options_init(plx_checkpoint_options* options) {
  if (options == nullptr) return;
  *options = plx_checkpoint_options{};
  options->struct_size = sizeof(plx_checkpoint_options);
  options->level = 3;
  options->threads = 1;
  options->shuffle = PLX_SHUFFLE_AUTO;
  options->strict = 1;
  options->staging_bytes = kDefaultStagingBytes;
}

PLX_API plx_status plx_session_save_checkpoint(plx_session* session, const char* path,
                                               const plx_checkpoint_options* options) {
  return guarded([&] {
    const char* fn = "plx_session_save_checkpoint";
    require(session, fn, "session");
    const std::string file = path_of(path, fn);
    session::save_session(*session->session, file, to_save(options_or_defaults(options, fn), fn));
  });
}

PLX_API plx_status plx_session_save_checkpoint_async(plx_session* session, const char* path,
                                                     const plx_checkpoint_options* options, plx_run** out_save) {
  return guarded([&] {
    const char* fn = "plx_session_save_checkpoint_async";
    require(session, fn, "session");
    require(out_save, fn, "out_save");
    const std::string file = path_of(path, fn);
    const plx_checkpoint_options o = options_or_defaults(options, fn);
    const session::SaveOptions save = to_save(o, fn);
    session::AsyncSaver* saver = nullptr;
    {
      std::lock_guard lock(session->saver_mutex);
      if (!session->saver) session->saver = std::make_unique<session::AsyncSaver>(o.threads, o.staging_bytes);
      saver = session->saver.get();
    }
    std::function<void(std::exception_ptr)> done;
    if (o.on_complete != nullptr) {
      done = [fn_ptr = o.on_complete, ud = o.user_data](std::exception_ptr error) {
        std::string message;
        const plx_status status = abi::describe(error, message);
        fn_ptr(ud, status, message.c_str());
      };
    }
    auto run = std::make_unique<plx_run>();
    run->handle = saver->save(*session->session, file, save, std::move(done));
    *out_save = run.release();
  });
}

PLX_API plx_status plx_session_load_checkpoint(plx_session* session, const char* path,
                                               const plx_checkpoint_options* options) {
  return guarded([&] {
    const char* fn = "plx_session_load_checkpoint";
    require(session, fn, "session");
    const std::string file = path_of(path, fn);
    const plx_checkpoint_options o = options_or_defaults(options, fn);
    session::LoadOptions load;
    load.strict = o.strict != 0;
    for (size_t i = 0; i < o.num_counters; ++i) load.required_counters.emplace_back(o.counter_names[i]);
    const session::LoadResult result = session::load_session(*session->session, file, load);
    for (size_t i = 0; i < o.num_counters; ++i) o.counter_values[i] = result.counters.at(o.counter_names[i]);
  });
}

PLX_API plx_status plx_session_get_step(const plx_session* session, int64_t* out_step) {
  return guarded([&] {
    require(session, "plx_session_get_step", "session");
    require(out_step, "plx_session_get_step", "out_step");
    *out_step = session->session->steps();
  });
}

}  // extern "C"
