#include "core/session/variable_access.h"

#include <cstring>
#include <string>

#include "core/ir/error.h"
#include "core/replication/shard_layout.h"

namespace plexus::session {

using ir::ErrorCode;
using runtime::HostedReplicas;
using runtime::HostUpdate;
using runtime::ReplicaStorage;

namespace {

// A replica of `range` holding shard `shard` of row `row` of `layout`: the row's own source
// when in range, else the lowest one with that row and shard; -1 when none is.
int64_t holder(const replication::VariableLayout& layout, size_t row, size_t shard, const HostedReplicas& range) {
  const int64_t source = layout.row_sources[row][shard];
  if (range.hosts(source)) return source;
  for (int64_t r = range.first; r < range.first + range.count; ++r) {
    const auto i = static_cast<size_t>(r);
    if (static_cast<size_t>(layout.replica_row[i]) == row && layout.shard_index[i] == static_cast<int64_t>(shard)) {
      return r;
    }
  }
  return -1;
}

// The layout of one row per group (read_variable_groups).
replication::VariableLayout group_layout(const ir::TensorInfo& t) {
  ir::TensorInfo one_per_group = t;
  one_per_group.retrieval = ir::RetrievalMode::OnePerGroup;
  return replication::variable_layout(one_per_group);
}

}  // namespace

VariableAccess::VariableAccess(const ir::Graph& graph, const compile::Program& program, const HostedReplicas& hosted,
                               int64_t num_workers, const ReplicaStorage& storage, HostUpdate* host_update,
                               HostCollectives host_collectives)
    : graph_(graph),
      program_(program),
      hosted_(hosted),
      num_workers_(num_workers),
      storage_(storage),
      host_update_(host_update),
      host_collectives_(std::move(host_collectives)) {}

const ir::TensorInfo& VariableAccess::variable(ir::TensorId tensor) const {
  const ir::TensorInfo& t = graph_.tensor(tensor);
  if (t.kind != ir::TensorKind::Variable && t.kind != ir::TensorKind::RemoteVariable) {
    ir::fail(ErrorCode::InvalidArgument, "tensor '" + t.name + "' is not a variable");
  }
  return t;
}

ir::Shape VariableAccess::variable_shape(ir::TensorId tensor) const {
  return replication::variable_layout(variable(tensor)).host_shape;
}

void VariableAccess::check_bytes(const ir::TensorInfo& t, const replication::VariableLayout& layout, size_t bytes) const {
  const ir::Shape shape = layout.host_shape;
  const size_t expected = static_cast<size_t>(ir::numel(shape)) * ir::dtype_size(t.dtype);
  if (bytes != expected) {
    ir::fail(ErrorCode::InvalidArgument, "variable '" + t.name + "': host buffer is " + std::to_string(bytes) +
                                             " bytes, expected " + std::to_string(expected) + " for " +
                                             std::string(ir::dtype_name(t.dtype)) + ir::shape_string(shape) +
                                             (graph_.replication_factor() > 1 ? " (its retrieval mode's shape)" : ""));
  }
}

void VariableAccess::read_variable(ir::TensorId tensor, std::span<std::byte> out) const {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  const replication::VariableLayout layout = replication::variable_layout(t);
  check_bytes(t, layout, out.size());
  transfer_variable(layout, t, tensor, out.data(), true);
}

void VariableAccess::write_variable(ir::TensorId tensor, std::span<const std::byte> data) {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  const replication::VariableLayout layout = replication::variable_layout(t);
  check_bytes(t, layout, data.size());
  transfer_variable(layout, t, tensor, const_cast<std::byte*>(data.data()), false);
  refresh_host_weights(tensor);
}

VariableStorage VariableAccess::variable_storage(ir::TensorId tensor) const {
  const ir::TensorInfo& t = variable(tensor);
  VariableStorage s;
  const bool host = t.kind == ir::TensorKind::RemoteVariable || program_.offloaded.count(tensor);
  (host ? s.remote_bytes : s.device_bytes) = t.bytes();
  s.shard_over = t.sharding ? t.sharding->shard_over : 1;
  return s;
}

int64_t VariableAccess::variable_groups(ir::TensorId tensor) const { return variable(tensor).grouping->num_groups(); }

void VariableAccess::read_variable_groups(ir::TensorId tensor, std::span<std::byte> out) const {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  const replication::VariableLayout layout = group_layout(t);
  check_bytes(t, layout, out.size());
  transfer_variable(layout, t, tensor, out.data(), true);
}

void VariableAccess::write_variable_groups(ir::TensorId tensor, std::span<const std::byte> data) {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  const replication::VariableLayout layout = group_layout(t);
  check_bytes(t, layout, data.size());
  transfer_variable(layout, t, tensor, const_cast<std::byte*>(data.data()), false);
  refresh_host_weights(tensor);
}

void VariableAccess::read_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<std::byte> out) const {
  std::lock_guard lock(mutex_);
  transfer_remote_slot(buffer, entry, out.data(), out.size(), true);
}

void VariableAccess::write_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<const std::byte> data) {
  std::lock_guard lock(mutex_);
  transfer_remote_slot(buffer, entry, const_cast<std::byte*>(data.data()), data.size(), false);
}

void VariableAccess::refresh_host_weights(ir::TensorId tensor) {
  if (!host_update_) return;
  if (tensor != ir::kNoTensor) {
    host_update_->refresh(tensor);
    return;
  }
  for (size_t t = 0; t < graph_.num_tensors(); ++t) host_update_->refresh(static_cast<ir::TensorId>(t));
}

void VariableAccess::transfer_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::byte* host, size_t bytes,
                                          bool to_host) const {
  const ir::RemoteBuffer& b = graph_.remote_buffer(buffer);
  if (entry < 0 || entry >= b.entries) {
    ir::fail(ErrorCode::InvalidArgument, "remote buffer " + std::to_string(buffer) + ": slot " + std::to_string(entry) +
                                             " is not in [0, " + std::to_string(b.entries) + ")");
  }
  const size_t slot = static_cast<size_t>(ir::numel(b.shape)) * ir::dtype_size(b.dtype);
  if (bytes != slot * static_cast<size_t>(hosted_.count)) {
    ir::fail(ErrorCode::InvalidArgument, "remote buffer " + std::to_string(buffer) + ": host buffer is " + std::to_string(bytes) +
                                             " bytes, expected " + std::to_string(slot * static_cast<size_t>(hosted_.count)) +
                                             " ([hosted replicas] + slot shape)");
  }
  for (int64_t r = 0; r < hosted_.count; ++r) {
    std::byte* device = storage_.remote(r).slot(static_cast<size_t>(buffer), entry);
    std::byte* row = host + static_cast<size_t>(r) * slot;
    if (to_host) {
      std::memcpy(row, device, slot);
    } else {
      std::memcpy(device, row, slot);
    }
  }
}

void VariableAccess::transfer_variable(const replication::VariableLayout& layout, const ir::TensorInfo& t,
                                       ir::TensorId tensor, std::byte* host, bool to_host) const {
  const size_t esize = ir::dtype_size(t.dtype);
  const int64_t row_numel = ir::numel(layout.row_shape);
  const size_t row_bytes = static_cast<size_t>(row_numel) * esize;
  if (!to_host) {
    for (int64_t r = hosted_.first; r < hosted_.first + hosted_.count; ++r) {
      const auto row = static_cast<size_t>(layout.replica_row[static_cast<size_t>(r)]);
      replication::extract_shard(host + row * row_bytes, storage_.variable_buffer(tensor, r), row_numel,
                                 layout.shard_over, layout.shard_index[static_cast<size_t>(r)], esize);
    }
    return;
  }
  const std::vector<std::byte> gathered =
      read_needs_every_worker(layout) ? gather_replicas(t, tensor) : std::vector<std::byte>();
  for (size_t row = 0; row < layout.row_sources.size(); ++row) {
    const std::vector<int64_t>& sources = layout.row_sources[row];
    for (size_t shard = 0; shard < sources.size(); ++shard) {
      const std::byte* source = gathered.empty()
                                    ? storage_.variable_buffer(tensor, holder(layout, row, shard, hosted_))
                                    : gathered.data() + static_cast<size_t>(sources[shard]) * t.bytes();
      replication::insert_shard(source, host + row * row_bytes, row_numel, layout.shard_over,
                                static_cast<int64_t>(shard), esize);
    }
  }
}

bool VariableAccess::read_needs_every_worker(const replication::VariableLayout& layout) const {
  for (int64_t w = 0; w < num_workers_ && num_workers_ > 1; ++w) {
    const HostedReplicas worker{w * hosted_.count, hosted_.count};
    for (size_t row = 0; row < layout.row_sources.size(); ++row) {
      for (size_t shard = 0; shard < layout.row_sources[row].size(); ++shard) {
        if (holder(layout, row, shard, worker) < 0) return true;
      }
    }
  }
  return false;
}

std::vector<std::byte> VariableAccess::gather_replicas(const ir::TensorInfo& t, ir::TensorId tensor) const {
  const size_t bytes = t.bytes();
  if (bytes % sizeof(int32_t) != 0) {  // the plugins move float32 / int32 elements
    ir::fail(ErrorCode::Unsupported, "variable '" + t.name + "': reading it needs the replicas of every worker, "
                                         "gathered as 4-byte words, and its " + std::to_string(bytes) +
                                         " bytes per replica are not a multiple of 4");
  }
  plugin_host::Collectives& collectives = host_collectives_();
  const std::vector<int64_t>& everyone = collectives.everyone();
  std::vector<std::vector<std::byte>> gathered(static_cast<size_t>(hosted_.count));
  collectives.each_hosted([&](replication::Communicator& comm, size_t local) {
    gathered[local].resize(everyone.size() * bytes);
    comm.all_gather(everyone, storage_.variable_buffer(tensor, hosted_.first + static_cast<int64_t>(local)),
                    gathered[local].data(), bytes / sizeof(int32_t), ir::DType::Int32);
  });
  return std::move(gathered.front());
}

}  // namespace plexus::session
