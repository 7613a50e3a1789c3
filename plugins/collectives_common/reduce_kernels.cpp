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

void reduce_float32(plx_reduce_op op, std::span<const CallDescriptor> calls, size_t offset,
                    size_t size, std::span<void* const> dst, bool streaming) {
  const auto same = [](float a) { return a; };
  const auto add = [](float a, float b) { return a + b; };
  switch (op) {
    case PLX_REDUCE_SUM:
      return reduce_blocks<float, float>(calls, offset, size, dst, streaming, add, same);
    case PLX_REDUCE_MEAN: {
      const float g = static_cast<float>(calls.size());
      return reduce_blocks<float, float>(calls, offset, size, dst, streaming, add,
                                         [g](float a) { return a / g; });
    }
    case PLX_REDUCE_MAX:
      return reduce_blocks<float, float>(calls, offset, size, dst, streaming, pick_max<float>,
                                         same);
    case PLX_REDUCE_MIN:
      return reduce_blocks<float, float>(calls, offset, size, dst, streaming, pick_min<float>,
                                         same);
    default:
      return;
  }
}

void reduce_int32(plx_reduce_op op, std::span<const CallDescriptor> calls, size_t offset,
                  size_t size, std::span<void* const> dst, bool streaming) {
  const auto same = [](int32_t a) { return a; };
  switch (op) {
    case PLX_REDUCE_SUM:  // unsigned arithmetic: wraps modulo 2^32 without overflow UB
      return reduce_blocks<int32_t, uint32_t>(
          calls, offset, size, dst, streaming, [](uint32_t a, uint32_t b) { return a + b; },
          [](uint32_t a) { return static_cast<int32_t>(a); });
    case PLX_REDUCE_MEAN: {  // exact int64 sum (g < 2^32), then truncation toward zero
      const auto g = static_cast<int64_t>(calls.size());
      return reduce_blocks<int32_t, int64_t>(
          calls, offset, size, dst, streaming, [](int64_t a, int64_t b) { return a + b; },
          [g](int64_t a) { return static_cast<int32_t>(a / g); });
    }
    case PLX_REDUCE_MAX:
      return reduce_blocks<int32_t, int32_t>(calls, offset, size, dst, streaming, pick_max<int32_t>,
                                             same);
    case PLX_REDUCE_MIN:
      return reduce_blocks<int32_t, int32_t>(calls, offset, size, dst, streaming, pick_min<int32_t>,
                                             same);
    default:
      return;
  }
}

}  // namespace

void reduce_in_member_order(plx_dtype dtype, plx_reduce_op op,
                            std::span<const CallDescriptor> calls, size_t offset, size_t size,
                            std::span<void* const> dsts, bool streaming) noexcept {
  if (size == 0 || calls.empty() || dsts.empty()) return;
  if (dtype == PLX_DTYPE_FLOAT32) {
    reduce_float32(op, calls, offset, size, dsts, streaming);
  } else if (dtype == PLX_DTYPE_INT32) {
    reduce_int32(op, calls, offset, size, dsts, streaming);
  }
}

}  // namespace plexus::collectives
