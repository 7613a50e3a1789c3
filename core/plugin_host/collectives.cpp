#include "core/plugin_host/collectives.h"

#include <plexus/collectives_plugin.h>

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <thread>
#include <utility>

#include "core/ir/error.h"

namespace plexus::plugin_host {

namespace {

using ir::ErrorCode;

constexpr size_t kMessageBytes = 512;

std::string plugin_name(const std::string& requested) {
  if (!requested.empty()) return requested;
  const char* env = std::getenv("PLEXUS_COLLECTIVES");
  return env != nullptr && *env != '\0' ? env : "local";
}

// Checks the table a plugin returned; names the first problem.
void check_table(const plx_collectives_plugin* t, const std::string& path) {
  auto bad = [&](const std::string& what) { ir::fail(ErrorCode::Plugin, "collectives plugin " + path + ": " + what); };
  if (t == nullptr) bad(std::string(PLX_COLLECTIVES_PLUGIN_SYMBOL) + "() returned NULL");
  if (t->abi_version != PLX_COLLECTIVES_ABI_VERSION) {
    bad("ABI version " + std::to_string(t->abi_version) + ", this Plexus needs " +
        std::to_string(PLX_COLLECTIVES_ABI_VERSION));
  }
  const size_t needed = offsetof(plx_collectives_plugin, abort) + sizeof(t->abort);
  if (t->struct_size < needed) {
    bad("table struct_size " + std::to_string(t->struct_size) + " is smaller than the " + std::to_string(needed) +
        " bytes of ABI version 1");
  }
  if (t->name == nullptr) bad("table has no name");
  const std::pair<const void*, const char*> entries[] = {
      {reinterpret_cast<const void*>(t->comm_create), "comm_create"},
      {reinterpret_cast<const void*>(t->comm_destroy), "comm_destroy"},
      {reinterpret_cast<const void*>(t->all_reduce), "all_reduce"},
      {reinterpret_cast<const void*>(t->all_gather), "all_gather"},
      {reinterpret_cast<const void*>(t->reduce_scatter), "reduce_scatter"},
      {reinterpret_cast<const void*>(t->broadcast), "broadcast"},
      {reinterpret_cast<const void*>(t->barrier), "barrier"},
      {reinterpret_cast<const void*>(t->abort), "abort"}};
  for (const auto& [fn, name] : entries) {
    if (fn == nullptr) bad(std::string("table entry '") + name + "' is NULL");
  }
}

ErrorCode error_code(plx_status status) {
  switch (status) {
    case PLX_ERR_INVALID_ARGUMENT:
    case PLX_ERR_TIMEOUT:
    case PLX_ERR_CANCELLED:
    case PLX_ERR_UNSUPPORTED:
      return static_cast<ErrorCode>(status);
    default:
      return ErrorCode::Plugin;
  }
}

}  // namespace

/// What the C plugin ABI needs of one communicator.
struct Collectives::Plugin {
  explicit Plugin(std::optional<ClusterDefinition> definition) : cluster(std::move(definition)) {}

  const plx_collectives_plugin* table = nullptr;
  ClusterFields cluster;  ///< what config's cluster fields point into
  plx_comm_config config{};
  plx_comm* comm = nullptr;
  plx_buffer_kind buffer_kind = PLX_BUFFER_DEVICE;
};

/// Replica r's end: fills plx_coll_args on the stack and turns failures into ir::Error.
class Collectives::View final : public replication::Communicator {
 public:
  View(Collectives& owner, int64_t replica) : owner_(owner), replica_(replica) {}

  int64_t replica() const override { return replica_; }

  void all_reduce(std::span<const int64_t> group, const void* send, void* recv, size_t count, ir::DType dtype,
                  replication::ReduceOp op) override {
    call("all_reduce", owner_.plugin_->table->all_reduce, group, send, recv, count, dtype, op, 0);
  }
  void all_gather(std::span<const int64_t> group, const void* send, void* recv, size_t count,
                  ir::DType dtype) override {
    call("all_gather", owner_.plugin_->table->all_gather, group, send, recv, count, dtype, replication::ReduceOp::Sum, 0);
  }
  void reduce_scatter(std::span<const int64_t> group, const void* send, void* recv, size_t count, ir::DType dtype,
                      replication::ReduceOp op) override {
    call("reduce_scatter", owner_.plugin_->table->reduce_scatter, group, send, recv, count, dtype, op, 0);
  }
  void broadcast(std::span<const int64_t> group, int64_t root, const void* send, void* recv, size_t count,
                 ir::DType dtype) override {
    call("broadcast", owner_.plugin_->table->broadcast, group, send, recv, count, dtype, replication::ReduceOp::Sum, root);
  }
  void barrier(std::span<const int64_t> group) override {
    call("barrier", owner_.plugin_->table->barrier, group, nullptr, nullptr, 0, ir::DType::Float32, replication::ReduceOp::Sum,
         0);
  }

 private:
  void call(const char* what, plx_coll_fn fn, std::span<const int64_t> group, const void* send, void* recv,
            size_t count, ir::DType dtype, replication::ReduceOp op, int64_t root) {
    message_[0] = '\0';
    const plx_coll_args args{sizeof(plx_coll_args),
                             plx_coll_group{group.data(), group.size()},
                             replica_,
                             send,
                             recv,
                             count,
                             static_cast<plx_dtype>(dtype),
                             static_cast<plx_reduce_op>(op),
                             root,
                             owner_.plugin_->buffer_kind,
                             message_,
                             kMessageBytes};
    const plx_status status = fn(owner_.plugin_->comm, &args);
    if (status != PLX_OK) {
      message_[kMessageBytes - 1] = '\0';
      ir::fail(error_code(status), std::string("collective ") + what + " (" + owner_.plugin_->table->name + " plugin), replica " +
                                       std::to_string(replica_) + ": " + message_);
    }
  }

  Collectives& owner_;
  int64_t replica_;
  char message_[kMessageBytes];
};

Collectives::Collectives(const std::string& name, int64_t replication_factor, int64_t first_local,
                         int64_t local_replicas, int64_t timeout_ms, bool host_buffers,
                         std::optional<ClusterDefinition> cluster)
    : library_(PluginLibrary::open("collectives", plugin_name(name))),
      plugin_(std::make_unique<Plugin>(std::move(cluster))) {
  plugin_->buffer_kind = host_buffers ? PLX_BUFFER_HOST : PLX_BUFFER_DEVICE;
  auto entry = reinterpret_cast<plx_collectives_plugin_entry>(library_.symbol(PLX_COLLECTIVES_PLUGIN_SYMBOL));
  plugin_->table = entry();
  check_table(plugin_->table, library_.path());
  plx_comm_config& config = plugin_->config;
  config.struct_size = sizeof(plx_comm_config);
  config.replication_factor = replication_factor;
  config.first_local_replica = first_local;
  config.local_replicas = local_replicas;
  config.timeout_ms = timeout_ms;
  plugin_->cluster.fill(config);
  create_comm();
  for (int64_t r = 0; r < replication_factor; ++r) everyone_.push_back(r);
  for (int64_t r = first_local; r < first_local + local_replicas; ++r) {
    views_.push_back(std::make_unique<View>(*this, r));
  }
}

Collectives::~Collectives() {
  if (plugin_->comm != nullptr) plugin_->table->comm_destroy(plugin_->comm);
}

std::string Collectives::name() const { return plugin_->table->name; }

void Collectives::each_hosted(const std::function<void(replication::Communicator&, size_t)>& fn) {
  ensure_comm();
  std::vector<std::exception_ptr> errors(views_.size());
  std::vector<std::thread> threads;
  for (size_t local = 0; local < views_.size(); ++local) {
    threads.emplace_back([&, local] {
      try {
        fn(*views_[local], local);
      } catch (const std::exception& e) {
        errors[local] = std::current_exception();
        abort(e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    reset();
    std::rethrow_exception(e);
  }
}

replication::Communicator* Collectives::communicator(int64_t replica) {
  return views_.at(static_cast<size_t>(replica - plugin_->config.first_local_replica)).get();
}

void Collectives::create_comm() {
  char message[kMessageBytes] = {};
  plx_comm* comm = nullptr;
  const plx_status status = plugin_->table->comm_create(&plugin_->config, &comm, message, sizeof message);
  if (status != PLX_OK || comm == nullptr) {
    message[kMessageBytes - 1] = '\0';
    ir::fail(ErrorCode::Plugin, "collectives plugin " + library_.path() + ": comm_create failed (" +
                                    std::to_string(status) + "): " + message);
  }
  plugin_->comm = comm;
  aborted_ = false;
}

void Collectives::abort(const std::string& reason) {
  aborted_ = true;
  if (plugin_->comm != nullptr) plugin_->table->abort(plugin_->comm, reason.c_str());
}

void Collectives::reset() {
  if (!aborted_ || plugin_->comm == nullptr) return;
  plugin_->table->comm_destroy(plugin_->comm);
  plugin_->comm = nullptr;
}

void Collectives::ensure_comm() {
  if (plugin_->comm == nullptr) create_comm();
}

}  // namespace plexus::plugin_host
