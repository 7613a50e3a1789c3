#include "core/session/session_checkpoint.h"

#include <cstring>
#include <set>
#include <utility>

#include "core/ir/error.h"

namespace plexus::session {

namespace {

using checkpoint::CheckpointReader;
using checkpoint::Manifest;
using checkpoint::TensorEntry;
using checkpoint::WriteStats;

// A tensor of the session as a checkpoint stores it: a variable, or a remote buffer slot
// that holds no variable.
struct Target {
  TensorEntry entry;
  ir::TensorId tensor = ir::kNoTensor;
  ir::RemoteBufferId buffer = -1;
  int64_t slot = 0;
};

bool shuffled(ir::DType dtype, Shuffle s) { return s == Shuffle::On || (s == Shuffle::Auto && dtype == ir::DType::Float32); }

std::vector<Target> targets_of(const Session& session, Shuffle shuffle) {
  const ir::Graph& g = session.graph();
  std::vector<Target> out;
  std::set<std::pair<ir::RemoteBufferId, int64_t>> variable_slots;
  for (size_t i = 0; i < g.num_tensors(); ++i) {
    const auto id = static_cast<ir::TensorId>(i);
    const ir::TensorInfo& t = g.tensor(id);
    if (t.kind != ir::TensorKind::Variable && t.kind != ir::TensorKind::RemoteVariable) continue;
    if (t.kind == ir::TensorKind::RemoteVariable) variable_slots.insert({t.remote_buffer, t.remote_entry});
    Target target;
    TensorEntry& e = target.entry;
    e.name = t.name;
    e.kind = t.kind == ir::TensorKind::Variable ? "variable" : "remote_variable";
    e.dtype = t.dtype;
    e.shape = t.sharding ? t.sharding->full_shape : t.shape;
    e.rows = t.grouping->num_groups();
    e.group_size = t.grouping->group_size();
    e.group_stride = t.grouping->stride();
    e.retrieval = t.retrieval == ir::RetrievalMode::AllReplicas ? "all_replicas" : "one_per_group";
    if (t.sharding) {
      e.shard_over = t.sharding->shard_over;
      e.padding = t.sharding->shard_elements() * t.sharding->shard_over - ir::numel(t.sharding->full_shape);
    }
    e.shuffle = shuffled(t.dtype, shuffle);
    target.tensor = id;
    out.push_back(std::move(target));
  }
  const int64_t r = session.replication_factor();
  for (size_t b = 0; b < g.remote_buffers().size(); ++b) {
    const ir::RemoteBuffer& rb = g.remote_buffers()[b];
    for (int64_t slot = 0; slot < rb.entries; ++slot) {
      if (variable_slots.count({static_cast<ir::RemoteBufferId>(b), slot})) continue;
      if (session.options().num_workers > 1) {
        ir::fail(ir::ErrorCode::Unsupported,
                 "remote buffer " + std::to_string(b) + " slot " + std::to_string(slot) +
                     " holds no variable: a checkpoint stores such slots for every replica, and with " +
                     std::to_string(session.options().num_workers) +
                     " workers each worker holds only its own replicas' slots");
      }
      Target target;
      TensorEntry& e = target.entry;
      e.name = "remote_buffer." + std::to_string(b) + ".slot." + std::to_string(slot);
      e.kind = "remote_buffer_slot";
      e.dtype = rb.dtype;
      e.shape = rb.shape;
      e.rows = r;
      e.group_size = 1;
      e.retrieval = "all_replicas";
      e.shuffle = shuffled(rb.dtype, shuffle);
      target.buffer = static_cast<ir::RemoteBufferId>(b);
      target.slot = slot;
      out.push_back(std::move(target));
    }
  }
  return out;
}

std::vector<std::byte> read_target(const Session& session, const Target& t) {
  std::vector<std::byte> data(t.entry.bytes());
  if (t.tensor != ir::kNoTensor) {
    session.read_variable_groups(t.tensor, data);
  } else {
    session.read_remote_slot(t.buffer, t.slot, data);
  }
  return data;
}

void write_target(Session& session, const Target& t, std::span<const std::byte> data) {
  if (t.tensor != ir::kNoTensor) {
    session.write_variable_groups(t.tensor, data);
  } else {
    session.write_remote_slot(t.buffer, t.slot, data);
  }
}

std::string type_of(const TensorEntry& e) { return std::string(ir::dtype_name(e.dtype)) + ir::shape_string(e.shape); }

// The saved rows laid out as the session's `rows` rows, or an empty vector when they
// cannot be (several different saved rows, and not as many as the session has).
std::vector<std::byte> map_rows(const TensorEntry& saved, std::vector<std::byte> data, int64_t rows) {
  if (saved.rows == rows) return data;
  const size_t row = data.size() / static_cast<size_t>(saved.rows);
  for (int64_t k = 1; k < saved.rows; ++k) {
    if (std::memcmp(data.data(), data.data() + static_cast<size_t>(k) * row, row) != 0) return {};
  }
  std::vector<std::byte> out(row * static_cast<size_t>(rows));
  for (int64_t k = 0; k < rows; ++k) std::memcpy(out.data() + static_cast<size_t>(k) * row, data.data(), row);
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

uint64_t Snapshot::bytes() const {
  uint64_t n = 0;
  for (const auto& d : data) n += d.size();
  return n;
}

Snapshot snapshot_session(const Session& session, const SaveOptions& options) {
  Snapshot snap;
  snap.write = options.write;
  Manifest& m = snap.manifest;
  m.replication_factor = session.replication_factor();
  m.counters = options.counters;
  const SessionOptions& o = session.options();
  m.options = {{"device_iterations", o.device_iterations},
               {"gradient_accumulation", o.gradient_accumulation},
               {"execution_strategy", session.strategy_name()},
               {"stages", session.num_stages()},
               {"offload_optimizer_state", o.offload_optimizer_state},
               {"weight_update_on_host", o.weight_update_on_host}};
  const auto hold = session.hold_runs();
  m.step = session.steps();
  for (Target& t : targets_of(session, options.shuffle)) {
    snap.data.push_back(read_target(session, t));
    m.tensors.push_back(std::move(t.entry));
  }
  return snap;
}

WriteStats write_snapshot(const std::string& path, const Snapshot& snapshot) {
  const std::vector<std::span<const std::byte>> spans(snapshot.data.begin(), snapshot.data.end());
  return write_checkpoint(path, snapshot.manifest, spans, snapshot.write);
}

WriteStats save_session(const Session& session, const std::string& path, const SaveOptions& options) {
  return write_snapshot(path, snapshot_session(session, options));
}

LoadResult load_session(Session& session, const std::string& path, const LoadOptions& options) {
  const CheckpointReader reader(path);
  for (const std::string& name : options.required_counters) {
    if (!reader.manifest().counters.count(name)) {
      ir::fail(ir::ErrorCode::NotFound, "checkpoint '" + path + "' holds no counter '" + name + "'");
    }
  }
  const std::vector<Target> targets = targets_of(session, Shuffle::Off);
  std::vector<std::string> missing, extra, mismatched;
  std::vector<std::pair<const Target*, std::vector<std::byte>>> loads;
  std::set<std::string> known;
  for (const Target& t : targets) {
    known.insert(t.entry.name);
    const TensorEntry* saved = reader.find(t.entry.name);
    if (saved == nullptr) {
      missing.push_back(t.entry.name);
      continue;
    }
    if (saved->dtype != t.entry.dtype || saved->shape != t.entry.shape) {
      mismatched.push_back(t.entry.name + " (" + type_of(*saved) + " in the checkpoint, " + type_of(t.entry) + " in the session)");
      continue;
    }
    std::vector<std::byte> rows = map_rows(*saved, reader.read(*saved), t.entry.rows);
    if (rows.empty()) {
      mismatched.push_back(t.entry.name + " (" + std::to_string(saved->rows) + " different rows in the checkpoint, one per " +
                           (saved->kind == "remote_buffer_slot" ? "replica" : "replica group") + ", " + std::to_string(t.entry.rows) +
                           " in the session)");
      continue;
    }
    loads.emplace_back(&t, std::move(rows));
  }
  for (const TensorEntry& e : reader.manifest().tensors) {
    if (!known.count(e.name)) extra.push_back(e.name);
  }
  std::string problems;
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    if (!names.empty()) problems += std::string(problems.empty() ? "" : "; ") + what + ": " + join(names);
  };
  if (options.strict) {
    list("missing from the checkpoint", missing);
    list("not in the session", extra);
  }
  list("mismatched", mismatched);
  if (!problems.empty()) {
    ir::fail(ir::ErrorCode::InvalidArgument, "checkpoint '" + path + "' does not fit the session (" + problems + ")");
  }
  LoadResult result;
  result.step = reader.manifest().step;
  result.counters = reader.manifest().counters;
  result.skipped = missing;
  result.skipped.insert(result.skipped.end(), extra.begin(), extra.end());
  const auto hold = session.hold_runs();
  for (const auto& [target, data] : loads) write_target(session, *target, data);
  session.set_steps(result.step);
  return result;
}

}  // namespace plexus::session
