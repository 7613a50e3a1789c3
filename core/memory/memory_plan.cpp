#include "core/memory/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace plexus::memory {

namespace {

bool overlaps(const BufferRequest& a, const BufferRequest& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, int64_t num_positions) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  plan.live_bytes.assign(static_cast<size_t>(std::max<int64_t>(num_positions, 1)), 0);

  size_t persistent_end = 0;
  std::vector<size_t> transient;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].persistent) {
      plan.offsets[i] = persistent_end;
      persistent_end += align_up(requests[i].bytes);
      plan.persistent_bytes += requests[i].bytes;
    } else {
      transient.push_back(i);
    }
  }

  // Largest first; among equal sizes, earliest first (deterministic).
  std::stable_sort(transient.begin(), transient.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });
  size_t arena_end = persistent_end;
  std::vector<size_t> placed;
  for (size_t idx : transient) {
    const BufferRequest& req = requests[idx];
    const size_t need = align_up(req.bytes);
    std::vector<size_t> conflicts;
    for (size_t p : placed) {
      if (overlaps(req, requests[p])) conflicts.push_back(p);
    }
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    // Best fit: the smallest gap between conflicting buffers that holds this one.
    size_t best_offset = SIZE_MAX, best_gap = SIZE_MAX, cursor = persistent_end;
    for (size_t c : conflicts) {
      const size_t start = plan.offsets[c];
      if (start >= cursor && start - cursor >= need && start - cursor < best_gap) {
        best_gap = start - cursor;
        best_offset = cursor;
      }
      cursor = std::max(cursor, start + align_up(requests[c].bytes));
    }
    plan.offsets[idx] = best_offset != SIZE_MAX ? best_offset : cursor;
    arena_end = std::max(arena_end, plan.offsets[idx] + need);
    placed.push_back(idx);
  }
  plan.arena_bytes = arena_end;

  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest& r = requests[i];
    const int64_t from = r.persistent ? 0 : std::max<int64_t>(r.first, 0);
    const int64_t to = r.persistent ? num_positions - 1 : std::min<int64_t>(r.last, num_positions - 1);
    for (int64_t p = from; p <= to; ++p) plan.live_bytes[static_cast<size_t>(p)] += r.bytes;
  }
  plan.peak_live_bytes = *std::max_element(plan.live_bytes.begin(), plan.live_bytes.end());
  return plan;
}

}  // namespace plexus::memory
