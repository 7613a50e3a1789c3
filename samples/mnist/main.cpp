// mnist: the PopXL MNIST example (the model seed 000 starts from) trained and tested on
// real MNIST through the Plexus C API, with plain SGD (w += -lr * grad via scaled_add_).
//
//   samples/mnist/mnist --epochs 1 --batch-size 8 --learning-rate 0.005
//   samples/mnist/mnist --replication-factor 2 --batch-size 4    (seed 000, 17.1)
//   samples/mnist/mnist --dataset fashion                       (Fashion-MNIST)
//
// With replication, each replica trains on its own --batch-size samples per step, so a
// step reads batch_size * R samples (seed 000 keeps batch_size * replication_factor
// constant to compare runs), and the gradients are mean-reduced with
// replicated_all_reduce before the update, which makes R=2, batch 4 train like R=1,
// batch 8. samples/common/mnist_app.h runs the loops.
#include "samples/common/mnist_app.h"

namespace {

// Forward, loss, autodiff, gradients mean-reduced across replicas (seed 000's listing
// leaves this out, so its replicas would drift apart), SGD update.
samples::TrainProgram build_train(const samples::CommonOptions& o) {
  samples::TrainProgram t{plx::Ir(o.replication_factor), {}, {}, {}, {}, {}};
  t.params = samples::add_mlp_variables(t.ir, samples::MlpWeights::random(o.seed));
  const plx::Tensor loss = samples::add_training_head(t, o.batch_size, t.params);
  const samples::MlpParams& p = t.params;
  const std::vector<plx::Tensor> params{p.w0, p.b0, p.w1, p.b1};
  std::vector<plx::Tensor> grads = t.ir.autodiff(loss, params);
  for (size_t i = 0; i < params.size(); ++i) {
    if (o.replication_factor > 1) grads[i] = t.ir.all_reduce_(grads[i], "mean");
    t.ir.scaled_add_(params[i], grads[i], 1.0, -o.learning_rate);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  samples::CommonOptions o = samples::mnist_defaults();
  return samples::run_mnist_sample(
      argc, argv, "mnist",
      "Usage: mnist [options]\nTrains the PopXL MNIST MLP with SGD on real MNIST (or Fashion-MNIST) with Plexus.", o,
      samples::po::options_description("mnist options"), [&] { return build_train(o); },
      [&](const plx::Session& s, const samples::TrainProgram&) {
        std::printf("train session: %lld replica(s), %zu device(s), GEMM kernels:\n",
                    static_cast<long long>(o.replication_factor), s.num_devices());
        samples::print_kernels(s);
      },
      [](nlohmann::json&) {});
}
