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

// The clones core/ops/common/vector_clones.h makes for the core's loops (plugins see the ABI
// headers only, so the three lines are repeated here), with its exceptions, none under
// clang (the fuzzers' build) nor ThreadSanitizer (its instrumented ifunc resolvers would
// run before its runtime is set up), and none off x86-64 (the clones name x86 levels).
#if defined(__clang__) || defined(__SANITIZE_THREAD__) || !defined(__x86_64__)
#define PLEXUS_REDUCE_CLONES
#else
#define PLEXUS_REDUCE_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

template <typename T>
const T* source(const CallDescriptor& call, size_t offset) {
  return static_cast<const T*>(call.send) + offset;
}

// The last step of one block: store(i, finish(lhs[i] combined with last[i])), where lhs is
// the accumulator of the members before the last (`acc`) or, with two members, the first
// member's values. One pass: reading every source at i before storing at i keeps in place
// correct.
template <typename T, typename Acc, typename Combine, typename Finish, typename Store>
[[gnu::always_inline]] inline void finish_block(const Acc* acc, const T* first, const T* last, size_t n, Combine combine,
                  Finish finish, Store store) {
  if (acc != nullptr) {
    for (size_t i = 0; i < n; ++i) store(i, finish(combine(acc[i], static_cast<Acc>(last[i]))));
  } else if (last != nullptr) {
    for (size_t i = 0; i < n; ++i) store(i, finish(combine(static_cast<Acc>(first[i]), static_cast<Acc>(last[i]))));
  } else {
    for (size_t i = 0; i < n; ++i) store(i, finish(static_cast<Acc>(first[i])));
  }
}

// finish_block into `out`, and into `also` too when it is not NULL: the two destinations
// of a two-member all-reduce are written in the same pass, so the block is never copied.
template <typename T, typename Acc, typename Combine, typename Finish>
[[gnu::always_inline]] inline void finish_block_into(const Acc* acc, const T* first, const T* last, size_t n, T* out, T* also,
                       Combine combine, Finish finish) {
  if (also == nullptr) {
    finish_block<T, Acc>(acc, first, last, n, combine, finish, [out](size_t i, T v) { out[i] = v; });
  } else {
    finish_block<T, Acc>(acc, first, last, n, combine, finish, [out, also](size_t i, T v) {
      out[i] = v;
      also[i] = v;
    });
  }
}

// The generic blocked loop. Acc is the accumulator type (wider than T where the op needs it),
// Combine folds the next member's value in, Finish turns an accumulator into an output value.
// Members 1 .. g-2 are folded into an L1 accumulator; the last member is folded in while
// the block is finished into the first two destinations (or, streaming, into `staged`),
// and the block is then copied to the others from L1.
//
// Compiled for AVX-512, AVX2 and the baseline, chosen at load time (GCC target_clones).
// The loops are element by element, so every clone gives the same bits; the wider ones
// keep the stores of an L2-resident all-reduce from limiting it (bench/README.md,
// "allreduce_bench"). The helpers above are always inlined, so that they are compiled for
// each clone's instruction set.
template <typename T, typename Acc, typename Combine, typename Finish>
PLEXUS_REDUCE_CLONES void reduce_blocks(std::span<const CallDescriptor> calls, size_t offset,
                                        size_t size, std::span<void* const> dsts, bool streaming,
                                        Combine combine, Finish finish) {
  alignas(64) Acc acc[kBlock];
  alignas(64) T staged[kBlock];  // a finished block for streaming stores
  const size_t g = calls.size();
  for (size_t done = 0; done < size; done += kBlock) {
    const size_t n = std::min(kBlock, size - done);
    const T* first = source<T>(calls[0], offset + done);
    const T* last = g > 1 ? source<T>(calls[g - 1], offset + done) : nullptr;
    if (g > 2) {
      const T* second = source<T>(calls[1], offset + done);
      for (size_t i = 0; i < n; ++i) acc[i] = combine(static_cast<Acc>(first[i]), static_cast<Acc>(second[i]));
    }
    for (size_t m = 2; m + 1 < g; ++m) {
      const T* next = source<T>(calls[m], offset + done);
      for (size_t i = 0; i < n; ++i) acc[i] = combine(acc[i], static_cast<Acc>(next[i]));
    }
    const auto destination = [&](size_t d) { return static_cast<T*>(dsts[d]) + done; };
    T* out = streaming ? staged : destination(0);
    T* also = !streaming && dsts.size() > 1 ? destination(1) : nullptr;
    finish_block_into<T, Acc>(g > 2 ? acc : nullptr, first, last, n, out, also, combine, finish);
    for (size_t d = streaming ? 0 : 2; d < dsts.size(); ++d) {
      if (streaming) {
        copy_streaming(destination(d), out, n * sizeof(T));
      } else {
        std::memcpy(destination(d), out, n * sizeof(T));
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
