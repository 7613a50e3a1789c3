// How a session's threads share the machine's cores (issue 37, "no oversubscription
// cliff"): the compute threads per device when the caller leaves it to Plexus, whether
// device and io threads spin before they sleep, and the warning a session gives when its
// compute threads outnumber the cores.
#pragma once

#include <cstdint>
#include <string>

namespace plexus::session {

/// What a session does with the cores. A value type; no state.
struct CoreBudget {
  int threads_per_device = 1;  ///< compute threads per device (each GEMM's panels)
  bool device_spin = false;    ///< device threads spin briefly before sleeping (streams::SpinWait)
  bool io_spin = false;        ///< io threads too
  std::string warning;         ///< empty, or why and what is done when threads outnumber the cores
};

/// The budget of `devices` device threads (all replicas' devices this process hosts, >= 1)
/// asking for `threads_per_device` compute threads each (0: cores / devices, at least 1),
/// with `io_threads` io threads, on `cores` cores (>= 1):
/// - device threads spin only when there is a core per device (measured: R=2 on 2 cores,
///   58k -> 101k samples/s, mnist batch 4); io threads only when there is also a core per
///   io thread (R=2 on 2 cores with io spinning: 141-224k -> 234-304k samples/s);
/// - when devices x threads_per_device exceeds the cores, `warning` says so, and what
///   holds: every wait spins at most 200 us before it sleeps (streams::SpinWait, the GEMM
///   helpers' join), GEMMs under 8 MFLOP take one thread (core/ops/matmul/gemm.cpp), and which
///   threads_per_device would fit. Sources: bench/char_gpt_threads.sh measures the cost.
CoreBudget plan_core_budget(int64_t devices, int threads_per_device, int io_threads, int64_t cores);

/// Writes `warning` to stderr, prefixed "plexus: warning: ", the first time it is called
/// with a non-empty warning in this process; later calls do nothing. Thread-safe.
void warn_once(const std::string& warning);

}  // namespace plexus::session
