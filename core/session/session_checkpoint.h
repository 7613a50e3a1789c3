// Saving a session's state to a checkpoint and restoring it, in any layout (docs/design.md
// "Checkpoints"; issue 7): every variable (replicated, grouped, replica-sharded, remote,
// optimizer state kept on the device or offloaded) as one full, unpadded row per replica
// group, every remote buffer slot that holds no variable as one row per replica, the
// session's step counter and the caller's counters (epoch, data loader position). On
// loading, rows are matched to the session's layout: the same number of rows row by row,
// one row (or rows that are all equal) to every group, so a checkpoint saved at R = 2 with
// RTS loads at R = 1 or R = 4, with or without RTS, whenever the full shapes agree.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "core/session/session.h"

namespace plexus::session {

enum class Shuffle { Auto, Off, On };  ///< Auto: byte-shuffle floating-point tensors

struct SaveOptions {
  checkpoint::WriteOptions write;
  Shuffle shuffle = Shuffle::Auto;
  std::map<std::string, int64_t> counters;  ///< the caller's, stored in the manifest
};

struct LoadOptions {
  /// true: the checkpoint and the session must hold the same tensors; false (partial):
  /// tensors found in both are loaded, the others are listed in LoadResult::skipped.
  bool strict = true;
  /// Counters the caller needs: NotFound naming the first one the checkpoint lacks,
  /// before anything is loaded.
  std::vector<std::string> required_counters;
};

struct LoadResult {
  int64_t step = 0;
  std::map<std::string, int64_t> counters;
  std::vector<std::string> skipped;  ///< partial loads: names in only one of the two
};

/// A session's state copied to host memory, ready to be compressed and written.
struct Snapshot {
  checkpoint::Manifest manifest;
  std::vector<std::vector<std::byte>> data;  ///< per manifest.tensors entry
  checkpoint::WriteOptions write;
  uint64_t bytes() const;
};

/// Copies the session's state between runs (Session::hold_runs).
Snapshot snapshot_session(const Session& session, const SaveOptions& options);
/// Compresses and writes a snapshot crash-safely; throws what write_checkpoint throws.
checkpoint::WriteStats write_snapshot(const std::string& path, const Snapshot& snapshot);
/// snapshot_session, then write_snapshot.
checkpoint::WriteStats save_session(const Session& session, const std::string& path, const SaveOptions& options);

/// Reads and checks the whole checkpoint first, then writes every tensor into the session
/// between runs, so a damaged or mismatching file changes nothing. Throws ir::Error:
/// Io / BadFormat from reading; InvalidArgument listing every tensor that is missing,
/// extra (strict) or mismatched (dtype, full shape, or groups that cannot be mapped);
/// NotFound for a required counter.
LoadResult load_session(Session& session, const std::string& path, const LoadOptions& options);

}  // namespace plexus::session
