// BLIS set-up done right (docs/design.md, "Platform facts"): which BLIS kernel sets
// (sub-configurations) suit this CPU, whether the user forced one with BLIS_ARCH_TYPE, and
// safe initialisation. Debian's BLIS 0.9 falls back to slow generic kernels on CPUs it
// does not recognise and aborts the process on a bad BLIS_ARCH_TYPE; Plexus checks the
// variable itself before BLIS ever reads it and always passes an explicit context.
#pragma once

#include <string>
#include <vector>

namespace plexus::ops {

/// One BLIS sub-configuration usable on this CPU.
struct BlisArch {
  int id;            ///< BLIS arch_t value
  std::string name;  ///< "zen3", "skx", "generic", ...
  const void* context;  ///< BLIS cntx_t* for native execution; owned by BLIS, never freed
};

/// What BLIS setup decided, for reports (plx_runtime_info, samples' start-up line).
struct BlisInfo {
  std::string version;                  ///< BLIS version string
  std::string flavour;                  ///< threading flavour linked in ("pthread")
  std::string cpu_features;             ///< relevant ISA extensions found, e.g. "avx2 fma"
  std::string blis_default;             ///< what BLIS's own detection picks on this CPU
  std::vector<std::string> candidates;  ///< kernel sets chosen from per GEMM shape
  std::string selection;                ///< "chosen per GEMM shape" or "BLIS_ARCH_TYPE=6 (zen3)"
};

/// Initialises BLIS once (thread-safe) and returns the kernel sets Plexus may choose
/// from: the one named by BLIS_ARCH_TYPE when that is set, else every configured set the
/// CPU can execute in the best ISA tier available (for example skx, zen3, zen2, zen and
/// haswell on an AVX-512 machine), never the generic one when a better one runs.
/// Throws ir::Error(Unsupported) when BLIS_ARCH_TYPE is not a number, not a BLIS 0.9
/// x86-64 id, or names kernels this CPU cannot execute; BLIS is then never initialised.
const std::vector<BlisArch>& blis_candidates();

/// Report of the set-up above (initialises BLIS like blis_candidates()). Does not throw:
/// a bad BLIS_ARCH_TYPE is reported in `selection`.
BlisInfo blis_info();

/// Whether BLIS_ARCH_TYPE named the one kernel set (initialises BLIS like blis_candidates()).
/// Does not throw; false when the variable is unset or bad.
bool blis_arch_forced();

}  // namespace plexus::ops
