#include "core/session/core_budget.h"

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace plexus::session {

CoreBudget plan_core_budget(int64_t devices, int threads_per_device, int io_threads, int64_t cores) {
  CoreBudget b;
  const int64_t fits = std::max<int64_t>(1, cores / devices);  // threads per device that the cores hold
  b.threads_per_device = threads_per_device > 0 ? threads_per_device : static_cast<int>(fits);
  b.device_spin = devices <= cores;
  b.io_spin = devices + io_threads <= cores;
  const int64_t compute = devices * b.threads_per_device;
  if (compute > cores) {
    b.warning = std::to_string(devices) + " device(s) x " + std::to_string(b.threads_per_device) +
                " compute thread(s) = " + std::to_string(compute) + " threads on " + std::to_string(cores) +
                " core(s). They take turns: every wait spins at most 200 us and then sleeps" +
                (b.device_spin ? "" : " (device threads sleep at once)") +
                ", and GEMMs under 8 MFLOP run on one thread. threads_per_device " + std::to_string(fits) +
                " fits this machine" + (devices > cores ? " as well as it can" : "") + ".";
  }
  return b;
}

void warn_once(const std::string& warning) {
  static std::atomic<bool> warned{false};
  if (warning.empty() || warned.exchange(true)) return;
  std::fprintf(stderr, "plexus: warning: %s\n", warning.c_str());
}

}  // namespace plexus::session
