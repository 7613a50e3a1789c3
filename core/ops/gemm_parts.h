// Running the parts of one kernel on several cores: the calling (device) thread takes part
// 0, the process's compute helper threads the others. Used by Gemm to split a GEMM's output
// into panels, each a single-threaded BLIS call, instead of BLIS's own threads: a waiting
// thread here sleeps (after a short spin) where BLIS's barrier spins, so a part delayed by
// another thread on its core (the data loader, the io threads) no longer keeps the other
// core spinning (bench/README.md, "replication_peer.sh").
#pragma once

#include <functional>

namespace plexus::ops {

/// Runs fn(p) for every p in [0, parts) and returns when all have returned: p = 0 on the
/// calling thread, the others on the process's idle helper threads (hardware_concurrency
/// - 1 of them, started on first use, asleep when idle); parts no helper is free for run
/// on the calling thread after part 0. parts <= 1 runs fn(0) alone. fn must not throw.
/// Allocates nothing after the helpers have started. Thread-safe: concurrent callers share
/// the helpers, each helper taking one part at a time.
void run_parts(int parts, const std::function<void(int)>& fn);

}  // namespace plexus::ops
