#include "core/runtime/host_update.h"

#include <algorithm>
#include <cstring>

#include "core/ir/error.h"
#include "core/ops/kernel_def.h"

namespace plexus::runtime {

using ir::ErrorCode;

/// One host-updated op: its host weight, the hosted replicas' gradients, and how far the
/// current run has got with it.
struct HostUpdate::Update {
  ir::OpId op = -1;
  ir::TensorId weight = ir::kNoTensor, gradient = ir::kNoTensor;  ///< storage roots
  int32_t stage = 0;
  bool at_update_start = false;  ///< posted at the start of the update step (accumulated gradient)
  size_t count = 0, bytes = 0;   ///< float32 elements of the weight (and gradient)
  std::vector<std::byte> weight_host;
  std::vector<std::vector<std::byte>> gradients;  ///< per hosted replica
  std::vector<std::byte> scratch;
  ops::Kernel kernel;
  std::vector<int64_t> posted;  ///< per hosted replica: gradients posted in this run
  int64_t reduced = 0;          ///< hosted replicas' all-reduces finished in this run, summed
  int64_t done = 0;             ///< steps applied in this run
};

namespace {

// Refuses a weight or optimizer state the host update cannot keep as one host value.
void require_one_value(const ir::Graph& graph, const ir::Op& op, ir::TensorId root, const char* role) {
  const ir::TensorInfo& t = graph.tensor(root);
  const std::string what = "weight_update_on_host: op '" + op.name + "': " + role + " '" + t.name + "' ";
  if (t.kind != ir::TensorKind::Variable) {
    ir::fail(ErrorCode::Unsupported, what + "is not a variable on the devices (a remote variable or a computed "
                                            "tensor); the host update keeps device variables only");
  }
  if (t.sharding || (t.grouping && t.grouping->num_groups() != 1)) {
    ir::fail(ErrorCode::Unsupported, what + "is replica-sharded or grouped; the host update keeps one value for all "
                                            "replicas (the mean over every replica's gradient)");
  }
}

// The last op before `before` that writes storage root `root`; -1 when none does.
ir::OpId last_writer(const ir::Graph& graph, ir::TensorId root, ir::OpId before) {
  ir::OpId last = -1;
  for (ir::OpId o = 0; o < before; ++o) {
    for (ir::TensorId t : graph.op(o).outputs) {
      if (graph.storage_root(t) == root) last = o;
    }
  }
  return last;
}

}  // namespace

HostUpdate::HostUpdate(const ir::Graph& graph, const compile::Program& program, int64_t replication_factor,
                       int64_t first_hosted, int64_t hosted, plugin_host::Collectives* collectives, DeviceBuffer device_buffer)
    : first_hosted_(first_hosted),
      hosted_(hosted),
      device_buffer_(std::move(device_buffer)),
      collectives_(collectives) {
  std::vector<std::pair<ir::OpId, std::unique_ptr<Update>>> found;  // (finishing op, update)
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.schema->gradient_input < 0 || op.phase != ir::Phase::Update) continue;
    auto u = make_update(graph, program, static_cast<ir::OpId>(i));
    const ir::OpId writer = last_writer(graph, u->gradient, u->op);
    // An accumulated gradient is final only in the update step (its accumulator).
    u->at_update_start = writer < 0 || (program.micro_batches > 1 && graph.op(writer).phase != ir::Phase::Update);
    found.emplace_back(u->at_update_start ? u->op : writer, std::move(u));
  }
  if (found.empty()) {
    ir::fail(ErrorCode::InvalidArgument,
             "weight_update_on_host: the graph has no weight update (adamw_ or scaled_add_ on a variable in the update "
             "phase) to run on the host");
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [finisher, u] : found) {
    index_[u->op] = updates_.size();
    if (!u->at_update_start) posted_after_[finisher].push_back(u->op);
    updates_.push_back(std::move(u));
  }
  for (auto& u : updates_) bind_kernel(graph, *u, replication_factor);  // every buffer is in place now
}

std::unique_ptr<HostUpdate::Update> HostUpdate::make_update(const ir::Graph& graph, const compile::Program& program,
                                                             ir::OpId o) {
  const ir::Op& op = graph.op(o);
  auto u = std::make_unique<Update>();
  u->op = o;
  u->weight = graph.storage_root(op.inputs[0]);
  u->gradient = graph.storage_root(op.inputs[static_cast<size_t>(op.schema->gradient_input)]);
  u->stage = program.placement.op_stage[static_cast<size_t>(o)];
  require_one_value(graph, op, u->weight, "weight");
  const ir::TensorInfo& w = graph.tensor(u->weight);
  if (w.dtype != ir::DType::Float32) {
    ir::fail(ErrorCode::Unsupported, "weight_update_on_host: op '" + op.name + "': weight '" + w.name + "' is " +
                                         std::string(ir::dtype_name(w.dtype)) + ", the host update takes float32");
  }
  for (int s : op.schema->optimizer_state_inputs) {
    const ir::TensorId root = graph.storage_root(op.inputs[static_cast<size_t>(s)]);
    require_one_value(graph, op, root, "optimizer state");
    state_.try_emplace(root, graph.tensor(root).bytes());
  }
  u->count = static_cast<size_t>(ir::numel(w.shape));
  u->bytes = w.bytes();
  u->weight_host.resize(u->bytes);
  u->gradients.assign(static_cast<size_t>(hosted_), std::vector<std::byte>(u->bytes));
  u->scratch.resize(program.op_scratch.at(static_cast<size_t>(o)));
  u->posted.assign(static_cast<size_t>(hosted_), 0);
  return u;
}

void HostUpdate::bind_kernel(const ir::Graph& graph, Update& u, int64_t replication_factor) {
  const ir::Op& op = graph.op(u.op);
  ops::KernelContext ctx{.graph = graph, .op = op, .scratch = u.scratch.empty() ? nullptr : u.scratch.data(),
                        .replica = first_hosted_, .replication_factor = replication_factor, .comm = nullptr,
                        .remote = {}, .notes = nullptr};
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ir::TensorId root = graph.storage_root(op.inputs[i]);
    std::byte* address = i == 0 ? u.weight_host.data()
                         : static_cast<int>(i) == op.schema->gradient_input ? u.gradients.front().data()
                                                                         : state(root);
    if (address == nullptr) {
      ir::fail(ErrorCode::Unsupported, "weight_update_on_host: op '" + op.name + "': input " + std::to_string(i) +
                                           " '" + graph.tensor(op.inputs[i]).name +
                                           "' is neither the weight, its gradient nor optimizer state");
    }
    ctx.inputs.push_back(&graph.tensor(op.inputs[i]));
    ctx.in.push_back(address);
  }
  for (size_t k = 0; k < op.outputs.size(); ++k) {  // weight-update outputs are their inputs, in place
    ctx.outputs.push_back(&graph.tensor(op.outputs[k]));
    ctx.out.push_back(ctx.in.at(static_cast<size_t>(op.schema->inplace_inputs.at(k))));
  }
  u.kernel = ops::kernel_def(op).kernel(ctx);
}

HostUpdate::~HostUpdate() {
  abort("the session is being destroyed");
  end_run();
}

std::byte* HostUpdate::state(ir::TensorId root) const {
  auto it = state_.find(root);
  return it == state_.end() ? nullptr : const_cast<std::byte*>(it->second.data());
}

const std::vector<ir::OpId>& HostUpdate::posted_after(ir::OpId op) const {
  static const std::vector<ir::OpId> none;
  auto it = posted_after_.find(op);
  return it == posted_after_.end() ? none : it->second;
}

std::vector<ir::OpId> HostUpdate::posted_at_update(int32_t stage) const {
  std::vector<ir::OpId> ops;
  for (const auto& u : updates_) {
    if (u->at_update_start && u->stage == stage) ops.push_back(u->op);
  }
  return ops;
}

ir::TensorId HostUpdate::gradient(ir::OpId op) const { return updates_[index_.at(op)]->gradient; }

template <class Ready>
void HostUpdate::wait(std::unique_lock<std::mutex>& lock, Ready ready) {
  changed_.wait(lock, [&] { return aborted_ || ready(); });
  if (aborted_) ir::fail(ErrorCode::Cancelled, abort_reason_);
}

void HostUpdate::post(ir::OpId op, int64_t replica, const std::byte* gradient) {
  Update& u = *updates_[index_.at(op)];
  const auto local = static_cast<size_t>(replica - first_hosted_);
  std::memcpy(u.gradients[local].data(), gradient, u.bytes);
  {
    std::lock_guard lock(mutex_);
    ++u.posted[local];
  }
  changed_.notify_all();
}

void HostUpdate::wait_and_copy(ir::OpId op, int64_t iteration, std::byte* weight) {
  Update& u = *updates_[index_.at(op)];
  std::unique_lock lock(mutex_);
  wait(lock, [&] { return u.done > iteration; });
  lock.unlock();
  std::memcpy(weight, u.weight_host.data(), u.bytes);
}

void HostUpdate::refresh(ir::TensorId weight) {
  for (auto& u : updates_) {
    if (u->weight != weight) continue;
    std::memcpy(u->weight_host.data(), device_buffer_(weight, first_hosted_), u->bytes);
    std::lock_guard lock(mutex_);
    synced_ = false;
  }
}

// Host thread of hosted replica `local`: every update of every step, in the fixed order.
void HostUpdate::run_host(size_t local, int64_t iterations) {
  replication::Communicator* comm = collectives_ ? collectives_->communicator(first_hosted_ + static_cast<int64_t>(local)) : nullptr;
  try {
    for (int64_t step = 0; step < iterations; ++step) {
      for (auto& up : updates_) {
        Update& u = *up;
        {
          std::unique_lock lock(mutex_);
          wait(lock, [&] { return u.posted[local] > step; });
        }
        std::byte* g = u.gradients[local].data();
        if (comm != nullptr) comm->all_reduce(collectives_->everyone(), g, g, u.count, ir::DType::Float32, replication::ReduceOp::Mean);
        std::unique_lock lock(mutex_);
        ++u.reduced;
        changed_.notify_all();
        if (local != 0) continue;  // the worker leader applies the update
        wait(lock, [&] { return u.reduced == (step + 1) * hosted_; });
        lock.unlock();
        u.kernel();
        lock.lock();
        u.done = step + 1;
        changed_.notify_all();
      }
    }
  } catch (...) {
    errors_[local] = std::current_exception();
    on_failure_("the weight update on the host failed for replica " +
                std::to_string(first_hosted_ + static_cast<int64_t>(local)));
  }
}

void HostUpdate::broadcast_weights() {
  collectives_->each_hosted([this](replication::Communicator& comm, size_t local) {
    for (auto& u : updates_) {
      comm.broadcast(collectives_->everyone(), 0, u->weight_host.data(), u->gradients[local].data(), u->count, ir::DType::Float32);
    }
  });
  for (auto& u : updates_) {
    std::memcpy(u->weight_host.data(), u->gradients.front().data(), u->bytes);
    for (int64_t r = first_hosted_; r < first_hosted_ + hosted_; ++r) {
      std::memcpy(device_buffer_(u->weight, r), u->weight_host.data(), u->bytes);
    }
  }
}

void HostUpdate::begin_run(int64_t iterations, std::function<void(const std::string&)> on_failure) {
  on_failure_ = std::move(on_failure);
  bool synced = false;
  {
    std::lock_guard lock(mutex_);
    aborted_ = false;
    synced = synced_;
    for (auto& u : updates_) {
      std::fill(u->posted.begin(), u->posted.end(), 0);
      u->reduced = u->done = 0;
    }
  }
  if (collectives_) collectives_->reset();
  if (collectives_ && !synced) broadcast_weights();  // throws: synced_ stays false
  {
    std::lock_guard lock(mutex_);
    synced_ = true;
  }
  errors_.assign(static_cast<size_t>(hosted_), nullptr);
  for (size_t local = 0; local < static_cast<size_t>(hosted_); ++local) {
    threads_.emplace_back([this, local, iterations] { run_host(local, iterations); });
  }
}

std::exception_ptr HostUpdate::end_run() {
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  for (const std::exception_ptr& e : errors_) {
    if (e) return e;
  }
  return nullptr;
}

void HostUpdate::abort(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    abort_reason_ = reason;
    synced_ = false;  // a failed run may have updated some replicas' weights and not others
  }
  changed_.notify_all();
  if (collectives_) collectives_->abort(reason);
}

}  // namespace plexus::runtime
