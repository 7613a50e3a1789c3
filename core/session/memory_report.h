// The memory report of a compiled session (docs/profiling.md, schema
// "plexus.memory_report" version 1): for each device of one replica, the planned bytes
// live at every action of its schedule by kind, the buffers live at its planned peak, its
// remote-buffer and host-offloaded bytes, and each of its variables' per-replica storage
// (PopVision's memory view, as JSON; plx_session_get_memory_report).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "core/session/session.h"

namespace plexus::session {

/// The schema version memory_report() writes; it grows when a key changes meaning or
/// goes away (added keys keep it).
inline constexpr int kMemoryReportVersion = 1;

/// The report of `session` (docs/profiling.md gives every key; bytes throughout). The
/// sums equal the session's memory_stats() of each device of its first hosted replica
/// (every hosted replica's are the same). Reads only what compiling fixed: safe while a
/// run goes on.
nlohmann::ordered_json memory_report(const Session& session);

}  // namespace plexus::session
