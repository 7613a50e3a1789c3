// mnist_rts: seed 000 ("MNIST with replication and RTS", PopXL user guide section 17)
// translated to the Plexus C API, through the C++ wrapper. The model is the PopXL MNIST MLP
// of samples/mnist; with --rts (and a replication factor > 1) its two weight matrices are
// replica-sharded as the seed shards them:
//   W0: replica_sharded_variable    -> (W0 remote variable, W0 shard); W0 = all_gather(shard)
//   W1: remote_replica_sharded_variable on an explicit remote buffer; its shard is
//       remote_load-ed, all-gathered, and written back with remote_store after the update.
// The biases stay replicated variables.
//
//   samples/mnist_rts/mnist_rts --replication-factor 2 --batch-size 4 --rts
//   samples/mnist_rts/mnist_rts --replication-factor 1 --batch-size 8
//
// Where this differs from the seed's listing, and why:
//  - Gradients are mean-reduced across the replicas: replicated_reduce_scatter(mean) for
//    the sharded weights (the seed's replica_sharded_slice keeps only this replica's own
//    gradient) and replicated_all_reduce(mean) for the biases (the seed updates them with
//    each replica's own gradient). Without these the replicas train on different data and
//    drift apart; with them R=2, batch 4 trains like R=1, batch 8 (seed 000 17.1 expects
//    "similar test accuracy"; here the weights agree within float rounding).
//  - W1's remote buffer has one entry: the seed asks for replication_factor entries but
//    only ever uses entry 0, so the others would be remote memory held for nothing.
#include <optional>

#include "samples/common/mnist_app.h"

namespace {

bool sharded(const samples::CommonOptions& o, bool rts) { return rts && o.replication_factor > 1; }

// A trainable weight as the seed's Trainable tuple: the variable (read back after
// training), its shard (sharded weights), the full tensor the forward pass uses, and the
// remote buffer of a remote weight.
struct Trainable {
  plx::Tensor var, shard, full;
  std::optional<plx::RemoteBuffer> remote_buffer;
};

struct RtsModel {
  Trainable w0, b0, w1, b1;
};

RtsModel add_weights(plx::Ir& ir, const samples::CommonOptions& o, bool rts) {
  using samples::kClasses, samples::kHidden, samples::kPixels;
  const samples::MlpWeights w = samples::MlpWeights::random(o.seed);
  auto plain = [&](const std::string& name, const plx::Shape& shape, const std::vector<float>& data) {
    const plx::Tensor t = ir.variable<float>(name, shape, data);
    return Trainable{t, {}, t, std::nullopt};
  };
  RtsModel m;
  m.b0 = plain("b0", {kHidden}, w.b0);
  m.b1 = plain("b1", {kClasses}, w.b1);
  if (!sharded(o, rts)) {
    m.w0 = plain("W0", {kPixels, kHidden}, w.w0);
    m.w1 = plain("W1", {kHidden, kClasses}, w.w1);
    return m;
  }
  // W0 (seed listing lines 83-88): a replica-sharded variable, gathered before use.
  const auto [w0_remote, w0_shard] = ir.replica_sharded_variable<float>("W0", {kPixels, kHidden}, w.w0);
  m.w0 = Trainable{w0_remote, w0_shard, ir.all_gather(w0_shard), std::nullopt};
  // W1 (lines 101-113): a remote buffer with the shard's shape, the remote replica-sharded
  // variable in its entry 0, loaded and gathered.
  const int64_t shard = (kHidden * kClasses + o.replication_factor - 1) / o.replication_factor;
  const plx::RemoteBuffer buffer = ir.remote_buffer(PLX_DTYPE_FLOAT32, {shard}, 1);
  const plx::Tensor w1_remote = ir.remote_replica_sharded_variable<float>("W1", {kHidden, kClasses}, w.w1, buffer, 0);
  const plx::Tensor w1_shard = ir.remote_load(buffer, 0);
  m.w1 = Trainable{w1_remote, w1_shard, ir.all_gather(w1_shard), buffer};
  return m;
}

samples::TrainProgram build_train(const samples::CommonOptions& o, bool rts) {
  samples::TrainProgram t{plx::Ir(o.replication_factor), {}, {}, {}, {}, {}};
  plx::Ir& ir = t.ir;
  const RtsModel m = add_weights(ir, o, rts);
  t.params = samples::MlpParams{m.w0.var, m.b0.var, m.w1.var, m.b1.var};
  const plx::Tensor loss = samples::add_training_head(t, o.batch_size, {m.w0.full, m.b0.full, m.w1.full, m.b1.full});
  // Gradients of the full tensors (for sharded weights: of the gathered W0 and W1).
  const std::vector<const Trainable*> trainables{&m.w0, &m.b0, &m.w1, &m.b1};
  std::vector<plx::Tensor> fulls;
  for (const Trainable* tr : trainables) fulls.push_back(tr->full);
  const std::vector<plx::Tensor> grads = ir.autodiff(loss, fulls);
  // update_weights_bias (lines 212-224), with the mean reductions the seed's listing lacks.
  plx::InSequence in_sequence(ir);  // the update of W1's shard, then its remote_store
  for (size_t i = 0; i < trainables.size(); ++i) {
    const Trainable& tr = *trainables[i];
    if (tr.shard.id != 0) {  // rts variable: reduce-scatter the full gradient into this replica's shard
      const plx::Tensor grad_shard = ir.reduce_scatter(grads[i], "mean");
      const plx::Tensor updated = ir.scaled_add_(tr.shard, grad_shard, 1.0, -o.learning_rate);
      if (tr.remote_buffer) ir.remote_store(*tr.remote_buffer, 0, updated);
    } else {
      const plx::Tensor grad = o.replication_factor > 1 ? ir.all_reduce_(grads[i], "mean") : grads[i];
      ir.scaled_add_(tr.var, grad, 1.0, -o.learning_rate);
    }
  }
  return t;
}

// Per-replica bytes of W0 and W1 and of each device, as the seed's RTS is about memory.
nlohmann::json memory_report(const plx::Session& s, const samples::TrainProgram& t) {
  nlohmann::json report;
  std::printf("per-replica memory (bytes):\n");
  for (const auto& [name, var] : {std::pair{"W0", t.params.w0}, std::pair{"W1", t.params.w1}}) {
    const plx_variable_storage st = s.variable_storage(var);
    std::printf("  %s: device %lld, remote buffer %lld, sharded over %lld replica(s)\n", name,
                static_cast<long long>(st.device_bytes), static_cast<long long>(st.remote_bytes),
                static_cast<long long>(st.shard_over));
    report[name] = {{"device_bytes", st.device_bytes}, {"remote_bytes", st.remote_bytes}, {"shard_over", st.shard_over}};
  }
  for (size_t d = 0; d < s.num_devices(); ++d) {
    const plx_memory_stats m = s.memory_stats(d);
    std::printf("  replica %zu: device arena %lld (variables %lld, planned peak %lld), remote buffers %lld\n", d,
                static_cast<long long>(m.arena_bytes), static_cast<long long>(m.variable_bytes),
                static_cast<long long>(m.planned_peak_bytes), static_cast<long long>(m.remote_buffer_bytes));
    report["replicas"].push_back({{"arena_bytes", m.arena_bytes},
                                  {"variable_bytes", m.variable_bytes},
                                  {"planned_peak_bytes", m.planned_peak_bytes},
                                  {"remote_buffer_bytes", m.remote_buffer_bytes}});
  }
  return report;
}

}  // namespace

int main(int argc, char** argv) {
  samples::CommonOptions o = samples::mnist_defaults();
  bool rts = false;
  nlohmann::json memory;
  samples::po::options_description own("mnist_rts options", samples::kHelpWidth, samples::kHelpWidth / 2);
  own.add_options()("rts", samples::po::bool_switch(&rts),
                    "shard W0 and W1 across the replicas (needs --replication-factor > 1)");
  return samples::run_mnist_sample(
      argc, argv, "mnist_rts",
      "Usage: mnist_rts [options]\nSeed 000: the PopXL MNIST MLP with replication and replicated tensor sharding.", o,
      own, [&] { return build_train(o, rts); },
      [&](const plx::Session& s, const samples::TrainProgram& t) {
        std::printf("train session: %lld replica(s), RTS %s, GEMM kernels:\n",
                    static_cast<long long>(o.replication_factor),
                    sharded(o, rts) ? "on" : (rts ? "off (needs a replication factor > 1)" : "off"));
        samples::print_kernels(s);
        memory = memory_report(s, t);
      },
      [&](nlohmann::json& metrics) {
        metrics["rts"] = sharded(o, rts);
        metrics["memory"] = memory;
      });
}
