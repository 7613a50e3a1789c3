#include "collectives_common/reduce_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "collectives_common/streaming_store.h"

namespace plexus::collectives {
namespace {

// Elements per block: the accumulators of one block stay in L1 (8 KiB at most) while every
// member's input streams through once.
constexpr size_t kBlock = 1024;

template <typename T>
const T* source(const CallDescriptor& call, size_t offset) {
  return static_cast<const T*>(call.send) + offset;
}

// The generic blocked loop. Acc is the accumulator type (wider than T where the op needs it),
// Combine folds the next member's value in, Finish turns an accumulator into an output value.
template <typename T, typename Acc, typename Combine, typename Finish>
void reduce_blocks(std::span<const CallDescriptor> calls, size_t offset, size_t size,
                   std::span<void* const> dsts, bool streaming, Combine combine, Finish finish) {
  alignas(64) Acc acc[kBlock];
  alignas(64) T staged[kBlock];  // finished values of a block, stored to every destination
  const bool direct = dsts.size() == 1 && !streaming;
  for (size_t done = 0; done < size; done += kBlock) {
    const size_t n = std::min(kBlock, size - done);
    const T* first = source<T>(calls[0], offset + done);
    for (size_t i = 0; i < n; ++i) acc[i] = static_cast<Acc>(first[i]);
    for (size_t m = 1; m < calls.size(); ++m) {
      const T* next = source<T>(calls[m], offset + done);
      for (size_t i = 0; i < n; ++i) acc[i] = combine(acc[i], static_cast<Acc>(next[i]));
    }
    T* out = direct ? static_cast<T*>(dsts[0]) + done : staged;
    for (size_t i = 0; i < n; ++i) out[i] = finish(acc[i]);
    if (direct) continue;
    for (void* dst : dsts) {
      T* to = static_cast<T*>(dst) + done;
      if (streaming) {
        copy_streaming(to, staged, n * sizeof(T));
      } else {
        std::memcpy(to, staged, n * sizeof(T));
      }
    }
  }
}

template <typename T>
T pick_max(T a, T b) {
  return b > a ? b : a;
}

template <typename T>
T pick_min(T a, T b) {
  return b < a ? b : a;
}

// Calls visit.template operator()<T, Acc>(combine, finish) with the element type, the
// accumulator type, and the combine / finish functions of (dtype, op) over g members: the
// one place that says how each reduction is computed. Unknown dtypes and ops do nothing
// (validation rejects them first).
template <typename Visit>
void with_reduction(plx_dtype dtype, plx_reduce_op op, size_t g, Visit&& visit) {
  if (dtype == PLX_DTYPE_FLOAT32) {
    const auto same = [](float a) { return a; };
    const auto add = [](float a, float b) { return a + b; };
    const float members = static_cast<float>(g);
    switch (op) {
      case PLX_REDUCE_SUM:
        return visit.template operator()<float, float>(add, same);
      case PLX_REDUCE_MEAN:
        return visit.template operator()<float, float>(add,
                                                       [members](float a) { return a / members; });
      case PLX_REDUCE_MAX:
        return visit.template operator()<float, float>(pick_max<float>, same);
      case PLX_REDUCE_MIN:
        return visit.template operator()<float, float>(pick_min<float>, same);
      default:
        return;
    }
  }
  if (dtype == PLX_DTYPE_INT32) {
    const auto same = [](int32_t a) { return a; };
    const auto members = static_cast<int64_t>(g);
    switch (op) {
      case PLX_REDUCE_SUM:  // unsigned arithmetic: wraps modulo 2^32 without overflow UB
        return visit.template operator()<int32_t, uint32_t>(
            [](uint32_t a, uint32_t b) { return a + b; },
            [](uint32_t a) { return static_cast<int32_t>(a); });
      case PLX_REDUCE_MEAN:  // exact int64 sum (g < 2^32), then truncation toward zero
        return visit.template operator()<int32_t, int64_t>(
            [](int64_t a, int64_t b) { return a + b; },
            [members](int64_t a) { return static_cast<int32_t>(a / members); });
      case PLX_REDUCE_MAX:
        return visit.template operator()<int32_t, int32_t>(pick_max<int32_t>, same);
      case PLX_REDUCE_MIN:
        return visit.template operator()<int32_t, int32_t>(pick_min<int32_t>, same);
      default:
        return;
    }
  }
}

}  // namespace

void reduce_in_member_order(plx_dtype dtype, plx_reduce_op op,
                            std::span<const CallDescriptor> calls, size_t offset, size_t size,
                            std::span<void* const> dsts, bool streaming) noexcept {
  if (size == 0 || calls.empty() || dsts.empty()) return;
  with_reduction(dtype, op, calls.size(), [&]<typename T, typename Acc>(auto combine, auto finish) {
    reduce_blocks<T, Acc>(calls, offset, size, dsts, streaming, combine, finish);
  });
}

size_t partial_element_bytes(plx_dtype dtype, plx_reduce_op op) {
  return dtype == PLX_DTYPE_INT32 && op == PLX_REDUCE_MEAN ? sizeof(int64_t) : kElementBytes;
}

void fold_partial(plx_dtype dtype, plx_reduce_op op, const void* partial_in,
                  std::span<const CallDescriptor> calls, size_t offset, size_t size,
                  void* partial_out) noexcept {
  if (size == 0) return;
  with_reduction(dtype, op, 1, [&]<typename T, typename Acc>(auto combine, auto /*finish*/) {
    Acc* out = static_cast<Acc*>(partial_out);
    size_t m = 0;
    if (partial_in != nullptr) {
      const Acc* in = static_cast<const Acc*>(partial_in);
      if (in != out) std::memcpy(out, in, size * sizeof(Acc));
    } else {
      const T* first = source<T>(calls[m++], offset);
      for (size_t i = 0; i < size; ++i) out[i] = static_cast<Acc>(first[i]);
    }
    for (; m < calls.size(); ++m) {
      const T* next = source<T>(calls[m], offset);
      for (size_t i = 0; i < size; ++i) out[i] = combine(out[i], static_cast<Acc>(next[i]));
    }
  });
}

void finish_partial(plx_dtype dtype, plx_reduce_op op, size_t g, const void* partial,
                    size_t size, void* out) noexcept {
  with_reduction(dtype, op, g, [&]<typename T, typename Acc>(auto /*combine*/, auto finish) {
    const Acc* in = static_cast<const Acc*>(partial);
    T* to = static_cast<T*>(out);
    for (size_t i = 0; i < size; ++i) to[i] = finish(in[i]);
  });
}

}  // namespace plexus::collectives
