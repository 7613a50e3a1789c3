// The manifest of a checkpoint file (docs/checkpoint-format.md; docs/design.md "Checkpoints"):
// JSON (nlohmann-json) naming every tensor with its type, full shape, the layout it had
// when saved (replica grouping, retrieval mode, RTS shard_over and padding), where its
// zstd frame is and the checksum of its bytes; then the session's replication factor,
// step counter, options and the caller's counters (epoch, data loader position).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ir/dtype.h"
#include "core/ir/shape.h"

namespace plexus::checkpoint {

/// One stored tensor: `rows` values of `shape` (one per replica group, or one per replica
/// for a remote buffer slot that holds no variable), full and unpadded, row-major.
struct TensorEntry {
  std::string name;
  std::string kind;           ///< "variable", "remote_variable" or "remote_buffer_slot"
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;            ///< the full shape of one row
  int64_t rows = 1;
  int64_t group_size = 1, group_stride = 1;  ///< the replica grouping when saved
  std::string retrieval = "one_per_group";   ///< the retrieval mode when saved
  int64_t shard_over = 1;     ///< RTS: replicas sharing a row in shards when saved (1: not sharded)
  int64_t padding = 0;        ///< RTS: zero elements that padded a row to a multiple of shard_over (not stored)
  bool shuffle = false;       ///< byte-shuffled before compression
  uint64_t offset = 0;        ///< of its zstd frame, from the start of the file
  uint64_t size = 0;          ///< of its zstd frame
  uint32_t crc32 = 0;         ///< zlib crc32 of the uncompressed, unshuffled bytes

  /// A "variable" entry with the default grouping and layout; offset, size and crc32 are
  /// left to the writer (write_checkpoint).
  static TensorEntry variable(std::string name, ir::DType dtype, ir::Shape shape, int64_t rows = 1, bool shuffle = false);

  /// rows x numel(shape) x dtype size.
  uint64_t bytes() const;
};

struct Manifest {
  int64_t replication_factor = 1;
  int64_t step = 0;                          ///< training steps the session had run
  std::map<std::string, int64_t> counters;   ///< the caller's (epoch, loader run, ...)
  nlohmann::json options = nlohmann::json::object();  ///< the session's options, for the record
  std::vector<TensorEntry> tensors;
};

/// Compact JSON of `m`. Throws ir::Error(InvalidArgument) when a name is not valid UTF-8.
std::string to_json(const Manifest& m);

/// Parses and checks a manifest whose frames must lie in [data_begin, file_size): valid
/// JSON of the right shape, known kinds and dtypes, positive dims, unique names, every
/// frame in range and no two overlapping. Throws ir::Error(BadFormat) saying what is wrong
/// and which tensor, prefixed with `what` (the file).
Manifest parse_manifest(std::string_view json, uint64_t data_begin, uint64_t file_size, const std::string& what);

}  // namespace plexus::checkpoint
