// Running the parts of one kernel on several cores: the calling (device) thread takes part
// 0, the process's compute helper threads the others. Used by Gemm to split a GEMM's output
// into panels, each a single-threaded BLIS call, instead of BLIS's own threads: a waiting
// thread here sleeps (after a short spin) where BLIS's barrier spins, so a part delayed by
// another thread on its core (the data loader, the io threads) no longer keeps the other
// core spinning (bench/README.md, "replication_peer.sh").
#pragma once

#include <type_traits>

namespace plexus::ops {

/// A part of a kernel: part(context, p) runs part p. Must not throw.
using PartFn = void (*)(void* context, int part);

/// Runs part(context, p) for every p in [0, parts) and returns when all have returned:
/// p = 0 on the calling thread, the others on the process's idle helper threads
/// (hardware_concurrency - 1 of them, started on first use, asleep when idle); parts no
/// helper is free for run on the calling thread after part 0, and so do all parts in a
/// child process made by fork() (which has no helper threads). parts <= 1 runs part 0
/// alone. Allocates nothing once the helpers have started; takes the helpers' and the
/// call's mutexes. Thread-safe: concurrent callers share the helpers, one part each at a
/// time.
void run_parts(int parts, PartFn part, void* context);

/// run_parts over a callable `fn(int part)`, by reference (never copied, so nothing is
/// allocated whatever it captures).
template <typename Fn>
void run_parts(int parts, Fn&& fn) {
  using Callable = std::remove_reference_t<Fn>;
  run_parts(parts, [](void* context, int p) { (*static_cast<Callable*>(context))(p); },
            const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace plexus::ops
