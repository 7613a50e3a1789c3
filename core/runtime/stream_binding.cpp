#include "core/runtime/stream_binding.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/ir/dtype_dispatch.h"
#include "core/ir/error.h"

namespace plexus::runtime {

namespace {

constexpr size_t kHeader = 64;  ///< device-to-host queue items: the row (int64), then the data, aligned

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// float16 sums in float32 and rounds once per element; bool sums are logical or.
template <class T>
void add_elements(std::byte* dst, const std::byte* src, size_t n) {
  auto* d = reinterpret_cast<T*>(dst);
  const auto* s = reinterpret_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_arithmetic_v<T>) {
      d[i] = static_cast<T>(d[i] + s[i]);
    } else {
      d[i] = ir::store<T>(ir::load(d[i]) + ir::load(s[i]));
    }
  }
}

}  // namespace

void add_into(ir::DType dtype, std::byte* dst, const std::byte* src, size_t n) {
  ir::visit_any(dtype, [&](auto tag) {
    add_elements<typename decltype(tag)::type>(dst, src, n);
    return 0;
  });
}

bool reads_in_place(const ir::Graph& graph, ir::StreamId stream, int64_t depth) {
  const ir::Stream& st = graph.stream(stream);
  if (depth == 0 || st.direction != ir::StreamDirection::HostToDevice || graph.tensor(st.tensor).bytes() < kInPlaceMinBytes) {
    return false;
  }
  const ir::TensorId root = graph.storage_root(st.tensor);
  for (const ir::Op& op : graph.ops()) {
    if (op.phase != ir::Phase::Update) continue;
    for (ir::TensorId t : op.inputs) {
      if (graph.storage_root(t) == root) return false;
    }
  }
  return true;
}

StreamBinding::StreamBinding(const ir::Graph& graph, int64_t replicas, int64_t depth, int io_threads, bool spin,
                             bool io_spin, const std::vector<int64_t>& held)
    : graph_(graph), replicas_(replicas), depth_(depth), transport_(streams::make_in_process_transport()) {
  num_endpoints_ = graph.num_streams() * static_cast<size_t>(replicas);
  endpoints_ = std::make_unique<Endpoint[]>(num_endpoints_);
  active_.assign(graph.num_streams(), false);
  in_place_.assign(graph.num_streams(), false);
  if (depth_ == 0) return;
  io_ = std::make_unique<streams::IoService>(io_threads);
  pump_ = std::make_unique<streams::StreamPump>(*io_, io_spin);
  for (size_t s = 0; s < graph.num_streams(); ++s) {
    const ir::Stream& stream = graph.stream(static_cast<ir::StreamId>(s));
    const size_t bytes = graph.tensor(stream.tensor).bytes();
    const bool h2d = stream.direction == ir::StreamDirection::HostToDevice;
    in_place_[s] = s < held.size() && held[s] > 0;
    const int64_t capacity = in_place_[s] ? depth + held[s] - 1 : depth;
    for (int64_t r = 0; r < replicas; ++r) {
      at(s, r).queue = std::make_unique<streams::BoundedQueue>(
          std::string(h2d ? "host-to-device" : "device-to-host") + " stream '" + stream.name + "' of replica " +
              std::to_string(r),
          h2d ? bytes : kHeader + bytes, static_cast<size_t>(capacity), spin);
    }
  }
}

void StreamBinding::bind(const RunRequest& request, const std::vector<streams::HostArrayLayout>& layouts) {
  layouts_ = &layouts;
  items_.clear();
  for (const streams::HostArrayLayout& layout : layouts) items_.push_back(layout.items());
  direct_ = depth_ == 0 || items_.empty() || *std::max_element(items_.begin(), items_.end()) <= 1;
  h2d_bytes_ = d2h_bytes_ = 0;
  exposed_wait_ns_ = taken_ = occupancy_ = 0;
  std::fill(active_.begin(), active_.end(), false);
  for (size_t i = 0; i < num_endpoints_; ++i) {
    Endpoint& e = endpoints_[i];
    e.source = nullptr;
    e.sink = nullptr;
    e.claimed = 0;
    if (e.queue) e.queue->reset();
  }
  for (const HostArray& a : request.inputs) {
    const auto s = static_cast<size_t>(a.stream);
    const streams::HostArrayLayout& layout = layouts[s];
    h2d_bytes_ += items_[s] * replicas_ * static_cast<int64_t>(layout.item_bytes());
    for (int64_t r = 0; r < replicas_; ++r) {
      at(s, r).source = [this, base = static_cast<const std::byte*>(a.data), &layout, r](int64_t step, std::byte* dst) {
        transport_->to_device(dst, base + layout.source_offset(step, r), layout.item_bytes());
      };
    }
  }
  for (const HostArray& a : request.outputs) {
    const auto s = static_cast<size_t>(a.stream);
    const ir::TensorInfo& t = graph_.tensor(graph_.stream(a.stream).tensor);
    const streams::HostArrayLayout& layout = layouts[s];
    active_[s] = true;
    d2h_bytes_ += items_[s] * replicas_ * static_cast<int64_t>(t.bytes());
    for (int64_t r = 0; r < replicas_; ++r) {
      at(s, r).sink = [this, base = static_cast<std::byte*>(a.data), &layout, n = static_cast<size_t>(ir::numel(t.shape)),
                       dtype = t.dtype](int64_t row, const std::byte* src) {
        std::byte* dst = base + layout.row_offset(row);
        if (layout.accumulates()) {
          add_into(dtype, dst, src, n);
        } else {
          transport_->to_host(dst, src, layout.item_bytes());
        }
      };
    }
  }
  for (const auto& [stream, cb] : request.callbacks) {
    const auto s = static_cast<size_t>(stream);
    const size_t bytes = graph_.tensor(graph_.stream(stream).tensor).bytes();
    for (int64_t r = 0; r < replicas_; ++r) {
      if (cb.fill) {
        at(s, r).source = [fill = cb.fill, bytes, r](int64_t step, std::byte* dst) { fill(step, r, dst, bytes); };
      } else {
        at(s, r).sink = [deliver = cb.deliver, bytes, r](int64_t row, const std::byte* src) { deliver(row, r, src, bytes); };
      }
    }
    (cb.fill ? h2d_bytes_ : d2h_bytes_) += items_[s] * replicas_ * static_cast<int64_t>(bytes);
    if (cb.deliver) active_[s] = true;
  }
}

void StreamBinding::start(std::function<void(std::exception_ptr)> on_error) {
  if (direct_) return;
  std::vector<streams::Feed> feeds;
  std::vector<streams::Drain> drains;
  for (size_t s = 0; s < graph_.num_streams(); ++s) {
    for (int64_t r = 0; r < replicas_; ++r) {
      Endpoint& e = at(s, r);
      if (e.source) {
        feeds.push_back({e.queue.get(), items_[s], [&e](int64_t k, std::byte* slot) { e.source(k, slot); }, &e.claimed, in_place_[s]});
      } else if (e.sink) {
        drains.push_back({e.queue.get(), items_[s], [&e](int64_t, const std::byte* slot) {
                            int64_t row;
                            std::memcpy(&row, slot, sizeof row);
                            if (row >= 0) e.sink(row, slot + kHeader);
                          }});
      }
    }
  }
  pump_->start(std::move(feeds), std::move(drains), std::move(on_error));
}

void StreamBinding::finish(bool abort_io) {
  if (direct_) return;
  if (abort_io) pump_->abort();
  pump_->wait();
  pump_->detach();
}

void StreamBinding::abort() {
  for (size_t i = 0; i < num_endpoints_; ++i) {
    if (endpoints_[i].queue) endpoints_[i].queue->abort();
  }
  if (pump_) pump_->abort();
}

StreamStats StreamBinding::stats() const {
  StreamStats out;
  out.h2d_bytes = h2d_bytes_;
  out.d2h_bytes = d2h_bytes_;
  out.exposed_wait_ns = exposed_wait_ns_.load();
  out.micro_batches = taken_.load();
  out.occupancy_sum = occupancy_.load();
  out.prefetch_depth = depth_;
  if (pump_) {
    const streams::PumpTimes t = pump_->times();
    out.transfer_ns = t.produce_ns + t.consume_ns;
  }
  return out;
}

void StreamBinding::load(size_t s, int64_t replica, int64_t step, std::byte* dst) {
  Endpoint& e = at(s, replica);
  if (direct_) {
    e.source(step, dst);
    return;
  }
  const size_t ready = e.queue->size();
  const std::byte* src = ready > 0 ? e.queue->try_consumer_slot() : nullptr;
  int64_t next = step;
  if (src == nullptr && e.claimed.compare_exchange_strong(next, step + 1, std::memory_order_acq_rel)) {
    // The io thread has not started this micro-batch: produce it here rather than wait,
    // and wake the io thread, which may be waiting to claim it.
    e.queue->ring();
    e.source(step, dst);
    count_take(0, 0);
    return;
  }
  const int64_t t0 = src == nullptr ? now_ns() : 0;
  if (src == nullptr) src = e.queue->consumer_slot();
  std::memcpy(dst, src, e.queue->item_bytes());
  e.queue->release();
  count_take(static_cast<int64_t>(ready), t0);
}

void StreamBinding::acquire(size_t s, int64_t replica, int64_t step) {
  Endpoint& e = at(s, replica);
  const auto k = static_cast<uint64_t>(step);
  if (direct_) {
    e.source(step, e.queue->slot_of(k));
    return;
  }
  const auto ready = static_cast<int64_t>(e.queue->committed()) - step;
  int64_t next = step;
  if (ready <= 0 && e.claimed.compare_exchange_strong(next, step + 1, std::memory_order_acq_rel)) {
    // As in load(): the io thread has not started it, so produce it here, in its slot.
    e.queue->ring();
    e.source(step, e.queue->slot_of(k));
    e.queue->commit_at(k);
    count_take(0, 0);
    return;
  }
  const int64_t t0 = ready > 0 ? 0 : now_ns();
  e.queue->consumer_item(k);
  count_take(std::max<int64_t>(ready, 0), t0);
}

void StreamBinding::release(size_t s, int64_t replica) {
  if (!direct_) at(s, replica).queue->release();
}

// One micro-batch taken by a device: `ready` buffers were filled when it asked for it;
// `wait_start` > 0: it waited from then on.
void StreamBinding::count_take(int64_t ready, int64_t wait_start) {
  if (wait_start > 0) exposed_wait_ns_.fetch_add(now_ns() - wait_start, std::memory_order_relaxed);
  taken_.fetch_add(1, std::memory_order_relaxed);
  occupancy_.fetch_add(ready, std::memory_order_relaxed);
}

void StreamBinding::store(size_t s, int64_t replica, int64_t item, const std::byte* src) {
  Endpoint& e = at(s, replica);
  const int64_t row = (*layouts_)[s].output_row(item, replica);
  if (direct_) {
    if (row >= 0) e.sink(row, src);
    return;
  }
  std::byte* slot = e.queue->producer_slot();
  std::memcpy(slot, &row, sizeof row);
  std::memcpy(slot + kHeader, src, e.queue->item_bytes() - kHeader);
  e.queue->commit();
}

}  // namespace plexus::runtime
