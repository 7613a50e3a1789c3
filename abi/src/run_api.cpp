// C API: stream callbacks, asynchronous runs, cancellation and streaming figures
// (docs/design.md "Streaming layer").
#include <chrono>

#include "abi/src/handles.h"
#include "abi/src/struct_size.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

// The ir::Error a callback's status becomes: its code (PLX_ERR_RUNTIME for values that are
// not statuses) and a message naming the callback, the stream, the micro-batch and the
// replica.
[[noreturn]] void callback_failed(plx_status status, const char* kind, const std::string& stream, const char* index_name,
                                  int64_t index, int64_t replica) {
  const bool known = (status >= PLX_ERR_INVALID_ARGUMENT && status <= PLX_ERR_BUFFER_TOO_SMALL) || status == PLX_ERR_INTERNAL;
  ir::fail(known ? static_cast<ir::ErrorCode>(status) : ir::ErrorCode::Runtime,
           std::string(kind) + " callback of stream '" + stream + "' returned " + plx_status_name(status) + " (" +
               std::to_string(status) + ") for " + index_name + " " + std::to_string(index) + " of replica " +
               std::to_string(replica));
}

runtime::StreamCallbacks wrap(const plx_stream_callback& c, const std::string& stream) {
  runtime::StreamCallbacks out;
  if (c.fill != nullptr) {
    out.fill = [fn = c.fill, ud = c.user_data, id = c.stream, stream](int64_t step, int64_t replica, std::byte* buffer,
                                                                      size_t bytes) {
      const plx_status s = fn(ud, id, step, replica, buffer, bytes);
      if (s != PLX_OK) callback_failed(s, "fill", stream, "step", step, replica);
    };
  }
  if (c.deliver != nullptr) {
    out.deliver = [fn = c.deliver, ud = c.user_data, id = c.stream, stream](int64_t row, int64_t replica,
                                                                            const std::byte* data, size_t bytes) {
      const plx_status s = fn(ud, id, row, replica, data, bytes);
      if (s != PLX_OK) callback_failed(s, "deliver", stream, "row", row, replica);
    };
  }
  return out;
}

runtime::RunRequest to_request(const ir::Graph& g, const plx_run_options* options) {
  require(options, "plx_session_run_async", "options");
  plx_run_options defaults;
  plx_run_options_init(&defaults);
  const plx_run_options read = abi::read_struct(*options, defaults, {abi::end_of(&plx_run_options::user_data)},
                                                "plx_session_run_async: options", "plx_run_options_init");
  const plx_run_options* o = &read;
  runtime::RunRequest r;
  r.inputs = abi::to_arrays(g, o->inputs, o->num_inputs, "plx_session_run_async", "options->inputs");
  r.outputs = abi::to_arrays(g, o->outputs, o->num_outputs, "plx_session_run_async", "options->outputs");
  if (o->num_callbacks > 0) require(o->callbacks, "plx_session_run_async", "options->callbacks");
  for (size_t i = 0; i < o->num_callbacks; ++i) {
    const std::string label = "plx_session_run_async options->callbacks[" + std::to_string(i) + "]";
    const ir::StreamId s = abi::decode_stream(g, o->callbacks[i].stream, label);
    if (r.callbacks.count(s)) {
      ir::fail(ir::ErrorCode::InvalidArgument, label + ": stream '" + g.stream(s).name + "' has two callbacks");
    }
    r.callbacks[s] = wrap(o->callbacks[i], g.stream(s).name);
  }
  if (o->on_complete != nullptr) {
    r.on_complete = [fn = o->on_complete, ud = o->user_data](std::exception_ptr error) {
      std::string message;
      const plx_status status = abi::describe(error, message);
      fn(ud, status, message.c_str());
    };
  }
  return r;
}

}  // namespace

extern "C" {

PLX_API void plx_run_options_init(plx_run_options* options) {
  if (options == nullptr) return;
  *options = plx_run_options{};
  options->struct_size = sizeof(plx_run_options);
}

PLX_API plx_status plx_session_run_async(plx_session* session, const plx_run_options* options, plx_run** out_run) {
  return guarded([&] {
    require(session, "plx_session_run_async", "session");
    require(out_run, "plx_session_run_async", "out_run");
    runtime::RunRequest request = to_request(session->session->graph(), options);
    auto run = std::make_unique<plx_run>();
    run->handle = session->session->run_async(std::move(request));
    *out_run = run.release();
  });
}

PLX_API plx_status plx_run_wait(plx_run* run, int64_t timeout_ms) {
  return guarded([&] {
    require(run, "plx_run_wait", "run");
    if (timeout_ms < 0) {
      run->handle->wait();
    } else if (!run->handle->wait_for(std::chrono::milliseconds(timeout_ms))) {
      ir::fail(ir::ErrorCode::StillRunning, "plx_run_wait: the run is still going after " + std::to_string(timeout_ms) + " ms");
    }
  });
}

PLX_API plx_status plx_run_cancel(plx_run* run) {
  return guarded([&] {
    require(run, "plx_run_cancel", "run");
    run->handle->cancel();
  });
}

PLX_API void plx_run_destroy(plx_run* run) {
  if (run == nullptr) return;
  try {
    run->handle->wait();
  } catch (...) {  // the run's error was the caller's to collect with plx_run_wait
  }
  delete run;
}

PLX_API plx_status plx_session_run_with(plx_session* session, const plx_run_options* options) {
  return guarded([&] {
    require(session, "plx_session_run_with", "session");
    session->session->run(to_request(session->session->graph(), options));
  });
}

PLX_API plx_status plx_session_cancel(plx_session* session) {
  return guarded([&] {
    require(session, "plx_session_cancel", "session");
    session->session->cancel();
  });
}

PLX_API plx_status plx_session_get_stream_stats(const plx_session* session, plx_stream_stats* out_stats) {
  return guarded([&] {
    const char* fn = "plx_session_get_stream_stats";
    require(session, fn, "session");
    require(out_stats, fn, "out_stats");
    const runtime::StreamStats s = session->session->last_stream_stats();
    plx_stream_stats full{};
    full.run_ns = s.run_ns;
    full.h2d_bytes = static_cast<size_t>(s.h2d_bytes);
    full.d2h_bytes = static_cast<size_t>(s.d2h_bytes);
    full.transfer_ns = s.transfer_ns;
    full.exposed_wait_ns = s.exposed_wait_ns;
    full.micro_batches = s.micro_batches;
    full.mean_occupancy =
        s.micro_batches > 0 ? static_cast<double>(s.occupancy_sum) / static_cast<double>(s.micro_batches) : 0.0;
    full.prefetch_depth = s.prefetch_depth;
    abi::write_struct(*out_stats, full, {abi::end_of(&plx_stream_stats::prefetch_depth)},
                      std::string(fn) + ": out_stats");
  });
}

}  // extern "C"
