// One replica's view of one collective call: what it asked for and its buffers. The
// rendezvous publishes these so that every member sees every other member's call.
#ifndef PLEXUS_COLLECTIVES_COMMON_CALL_H
#define PLEXUS_COLLECTIVES_COMMON_CALL_H

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "plexus/collectives_plugin.h"

namespace plexus::collectives {

enum class Collective : int32_t { all_reduce, all_gather, reduce_scatter, broadcast, barrier };

/** Both supported dtypes (float32, int32) are 4 bytes wide. */
inline constexpr size_t kElementBytes = 4;

struct CallDescriptor {
  Collective kind = Collective::barrier;
  int64_t replica = -1;  // global index of the caller
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  plx_dtype dtype = PLX_DTYPE_FLOAT32;
  plx_reduce_op op = PLX_REDUCE_SUM;
  int64_t root = -1;
  plx_buffer_kind buffer_kind = PLX_BUFFER_DEVICE;
};

/** The descriptor of a call of `kind` made with `args`. */
inline CallDescriptor describe_call(const plx_coll_args& args, Collective kind) {
  CallDescriptor call;
  call.kind = kind;
  call.replica = args.replica;
  call.send = args.send;
  call.recv = args.recv;
  call.count = args.count;
  call.dtype = args.dtype;
  call.op = args.op;
  call.root = args.root;
  call.buffer_kind = args.buffer_kind;
  return call;
}

/** Orders member lists lexicographically; transparent, so a map lookup needs no vector. */
struct MembersLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

/** True for the collectives that apply a reduction op. */
inline bool is_reduction(Collective kind) {
  return kind == Collective::all_reduce || kind == Collective::reduce_scatter;
}

/** True for the collectives that move data (every one but barrier). */
inline bool moves_data(Collective kind) { return kind != Collective::barrier; }

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_CALL_H
