// Where one run's streams read and write (docs/design.md "Streaming layer"): for every stream
// and replica, a source (host-to-device: a slice of the caller's array, moved through the
// transport, or the caller's fill callback) or a sink (device-to-host: a row of the
// caller's array, or the caller's deliver callback). With a prefetch depth d > 0, each
// (stream, replica) has a bounded queue of d device-side buffers that the io threads fill
// ahead of compute and drain as results arrive (StreamPump); with d = 0 the device
// threads call the sources and sinks themselves.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/ir/graph.h"
#include "core/streams/bounded_queue.h"
#include "core/streams/host_array_layout.h"
#include "core/streams/io_service.h"
#include "core/streams/stream_pump.h"
#include "core/streams/transport.h"

namespace plexus::runtime {

/// dst += src for n elements of `dtype` (output mode sum, gradient accumulation).
void add_into(ir::DType dtype, std::byte* dst, const std::byte* src, size_t n);

/// Host-to-device streams of at least this many bytes per micro-batch are read in place
/// when prefetching: the steps read the queue buffer the io thread filled instead of a copy
/// of it in the arena. Copying a prefetched buffer again costs the device as much as the
/// transfer once buffers are DRAM-bound (bench/h2d_bench: 56-61 % of memcpy bandwidth from
/// 4 MiB with the second copy); below this size the copy is cheaper than the hand-over it
/// saves (a device that finds the queue empty produces a copied micro-batch itself).
inline constexpr size_t kInPlaceMinBytes = 256 << 10;

/// Whether the steps read host-to-device stream `stream` in place from its queue with
/// prefetch depth `depth`: depth > 0, at least kInPlaceMinBytes, and not read by an update
/// op (the update step runs once per iteration, after the micro-batch buffers are gone).
bool reads_in_place(const ir::Graph& graph, ir::StreamId stream, int64_t depth);

/// A caller's host array for one stream: `data` holds numel(shape) elements of `dtype`.
struct HostArray {
  ir::StreamId stream;
  void* data;
  ir::DType dtype;
  ir::Shape shape;
};

/// Caller callbacks for one stream (C API plx_stream_callback, wrapped): fill(step,
/// replica, buffer, bytes) for host-to-device streams, deliver(row, replica, data, bytes)
/// for device-to-host ones. They throw ir::Error naming the stream to fail the run.
struct StreamCallbacks {
  std::function<void(int64_t, int64_t, std::byte*, size_t)> fill;
  std::function<void(int64_t, int64_t, const std::byte*, size_t)> deliver;
};

/// What a run reads and writes, and who hears of its end.
struct RunRequest {
  std::vector<HostArray> inputs, outputs;
  std::map<ir::StreamId, StreamCallbacks> callbacks;
  std::function<void(std::exception_ptr)> on_complete;  ///< null error = success
};

/// Streaming figures of the last run (nanoseconds summed over threads, bytes summed over
/// replicas).
struct StreamStats {
  int64_t run_ns = 0;
  int64_t h2d_bytes = 0, d2h_bytes = 0;
  int64_t transfer_ns = 0;     ///< io threads producing and consuming (copies and callbacks)
  int64_t exposed_wait_ns = 0; ///< devices waiting for a host-to-device buffer that was not ready
  int64_t micro_batches = 0;   ///< host-to-device buffers the devices took
  int64_t occupancy_sum = 0;   ///< queue fill level seen by the devices at each take, summed
  int64_t prefetch_depth = 0;
};

/// Thread-safety: bind/start/finish from the controlling thread; load/acquire/release/
/// store from device threads (each (stream, replica) pair from one device thread).
class StreamBinding {
 public:
  /// Queues for every stream and replica (`depth` buffers each) when depth > 0.
  /// `held[s]` > 0 for a stream read in place (reads_in_place): the micro-batches its
  /// loading stage holds at once (its slots); its queue gets depth + held - 1 buffers, so
  /// that `depth` can be filled ahead while the stage still reads the ones it holds.
  /// `spin`: device threads spin before sleeping on a queue (VirtualDevice); `io_spin`: so
  /// do the io threads between items (StreamPump). Each only when its threads have cores
  /// of their own: an io thread spinning on a core a device needs slows both.
  StreamBinding(const ir::Graph& graph, int64_t replicas, int64_t depth, int io_threads, bool spin, bool io_spin,
                const std::vector<int64_t>& held);

  /// Sets the sources and sinks of the next run: the caller's arrays are read and written
  /// where layouts[s] (per stream, alive until the next bind) puts each value, and each
  /// (stream, replica) moves layouts[s].items() values.
  void bind(const RunRequest& request, const std::vector<streams::HostArrayLayout>& layouts);
  /// Starts the io threads' pumping (depth > 0); `on_error` gets the first failure.
  void start(std::function<void(std::exception_ptr)> on_error);
  /// Waits for the io side after the devices finished (abort first when they failed).
  void finish(bool abort);
  /// Wakes every device and io thread waiting on a queue with ir::Error(Cancelled).
  void abort();
  StreamStats stats() const;

  /// Device side: step `step`'s buffer of host-to-device stream `s` for `replica` -> dst.
  void load(size_t s, int64_t replica, int64_t step, std::byte* dst);
  /// In-place streams: buffers in the ring of stream `s` (0 when it is copied instead);
  /// micro-batch k is in buffer k % ring(s).
  size_t ring(size_t s) const { return in_place_[s] ? at(s, 0).queue->capacity() : 0; }
  /// Buffer `index` (< ring(s)) of in-place stream `s` for `replica`: where the steps read it.
  const std::byte* ring_buffer(size_t s, int64_t replica, size_t index) const { return at(s, replica).queue->slot_of(index); }
  /// Device side, in-place stream: waits until micro-batch `step` is in its ring buffer.
  void acquire(size_t s, int64_t replica, int64_t step);
  /// Device side, in-place stream: the oldest micro-batch acquired is no longer read.
  void release(size_t s, int64_t replica);
  /// Device side: `replica`'s `item`-th result of the run (its row per the output mode;
  /// dropped when the mode does not return it).
  void store(size_t s, int64_t replica, int64_t item, const std::byte* src);
  /// Whether device-to-host stream `s` goes anywhere in this run.
  bool active(size_t s) const { return active_[s]; }

 private:
  struct Endpoint {
    std::unique_ptr<streams::BoundedQueue> queue;
    std::function<void(int64_t, std::byte*)> source;        ///< h2d
    std::function<void(int64_t, const std::byte*)> sink;    ///< d2h: (row, data)
    std::atomic<int64_t> claimed{0};  ///< h2d: next micro-batch nobody produces yet (streams::Feed)
  };
  Endpoint& at(size_t s, int64_t replica) const { return endpoints_[s * static_cast<size_t>(replicas_) + static_cast<size_t>(replica)]; }
  void count_take(int64_t ready, int64_t wait_start);

  const ir::Graph& graph_;
  int64_t replicas_, depth_;
  std::unique_ptr<streams::Transport> transport_;
  std::unique_ptr<streams::IoService> io_;
  std::unique_ptr<streams::StreamPump> pump_;
  std::unique_ptr<Endpoint[]> endpoints_;  ///< [stream][replica]
  size_t num_endpoints_ = 0;
  std::vector<bool> active_;
  std::vector<bool> in_place_;
  std::vector<int64_t> items_;
  const std::vector<streams::HostArrayLayout>* layouts_ = nullptr;  ///< the bound run's
  /// This run moves data on the device threads: depth 0, or one micro-batch per stream
  /// (nothing to prefetch within the run, and an io hand-over would only add latency).
  bool direct_ = true;
  std::atomic<int64_t> exposed_wait_ns_{0}, taken_{0}, occupancy_{0};
  int64_t h2d_bytes_ = 0, d2h_bytes_ = 0;
};

}  // namespace plexus::runtime
