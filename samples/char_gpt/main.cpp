// char_gpt: a small decoder-only transformer (model.h; nanoGPT's) trained on the bytes of a
// text corpus (the Debian package `fortunes` by default) through the Plexus C API, with
// AdamW; then validation loss in nats per byte and text sampled from the model.
//
//   samples/char_gpt/char_gpt                                   (4 layers, width 128, 4 heads, context 64)
//   samples/char_gpt/char_gpt --num-steps 2000 --batch-size 32 --metrics-out m.json
//   samples/char_gpt/char_gpt --stages 2 --gradient-accumulation 4
//   samples/char_gpt/char_gpt --replication-factor 2 --rts
//   samples/char_gpt/char_gpt --offload-optimiser
#include <plexus/plexus.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "samples/char_gpt/model.h"
#include "samples/common/checkpointing.h"
#include "samples/common/metrics.h"
#include "samples/common/mnist_mlp.h"
#include "samples/common/options.h"
#include "samples/common/profile.h"
#include "samples/common/progress.h"
#include "samples/common/train_run.h"
#include "samples/common/weights_file.h"

namespace {

using samples::po::value;
using samples::gpt::GptBuilder;
using samples::gpt::GptConfig;

constexpr unsigned kFeatures = samples::kText | samples::kCheckpoints | samples::kWeightsOut | samples::kLoader |
                               samples::kThreads | samples::kAccumulation;

struct Options : samples::CommonOptions {
  Options() {
    batch_size = 32;
    num_steps = 2000;
    device_iterations = 10;
    learning_rate = 1e-3;
    seed = 0;
  }
  GptConfig model;
  double weight_decay = 0.1;
  int64_t warmup_steps = 100;  // linear warm-up of the learning rate, then cosine decay
  double min_lr_ratio = 0.1;   // the cosine ends at learning rate x this at --num-steps
  double clip = 1.0;           // global gradient norm limit (0: none)
  int64_t eval_every = 500;   // steps between validation losses
  int64_t eval_batches = 20;  // validation micro-batches per validation loss
  int64_t generate = 300;     // bytes sampled at the end
  double temperature = 0.8;
  bool rts = false;                // AdamW state replica-sharded (ZeRO stage 1)
  bool offload_optimiser = false;  // AdamW state in host memory, loaded for the update
};

samples::po::options_description describe(Options& o) {
  samples::po::options_description desc("char_gpt options", samples::kHelpWidth, samples::kHelpWidth / 2);
  GptConfig& m = o.model;
  desc.add_options()("context", value(&m.context)->default_value(m.context), "tokens (bytes) per sample")(
      "layers", value(&m.layers)->default_value(m.layers), "transformer blocks")(
      "width", value(&m.width)->default_value(m.width), "model width C")(
      "heads", value(&m.heads)->default_value(m.heads), "attention heads (divide --width)")(
      "dropout", value(&m.dropout)->default_value(m.dropout, "0.1"), "dropout probability in training")(
      "tied", samples::po::bool_switch(&m.tied), "output layer = token embedding transposed")(
      "stages", value(&m.stages)->default_value(m.stages),
      "pipeline stages (devices per replica; divides --layers; needs --gradient-accumulation >= stages)")(
      "warmup-steps", value(&o.warmup_steps)->default_value(o.warmup_steps),
      "steps of linear learning-rate warm-up; then a cosine decay to --learning-rate x --min-lr-ratio at --num-steps")(
      "min-lr-ratio", value(&o.min_lr_ratio)->default_value(o.min_lr_ratio, "0.1"),
      "final learning rate as a fraction of --learning-rate (1: constant after the warm-up)")(
      "clip", value(&o.clip)->default_value(o.clip, "1.0"),
      "clip the gradients to this global norm (PyTorch's clip_grad_norm_; 0: no clipping)")(
      "weight-decay", value(&o.weight_decay)->default_value(o.weight_decay, "0.1"),
      "AdamW weight decay of matrices and embeddings (biases and norms: 0)")(
      "eval-every", value(&o.eval_every)->default_value(o.eval_every), "steps between validation losses")(
      "eval-batches", value(&o.eval_batches)->default_value(o.eval_batches),
      "validation micro-batches of --batch-size per validation loss")(
      "generate", value(&o.generate)->default_value(o.generate), "bytes to sample from the model at the end")(
      "temperature", value(&o.temperature)->default_value(o.temperature, "0.8"), "sampling temperature (> 0)")(
      "rts", samples::po::bool_switch(&o.rts),
      "replica-sharded AdamW state: each replica keeps and updates 1/R of it, then all-gathers the weights "
      "(needs --replication-factor > 1)")(
      "offload-optimiser", samples::po::bool_switch(&o.offload_optimiser),
      "keep the AdamW state in host memory, loaded only for the update");
  return desc;
}

void check(const Options& o) {
  const GptConfig& m = o.model;
  samples::require_at_least<int64_t>("context", m.context, 1);
  samples::require_at_least<int64_t>("layers", m.layers, 1);
  samples::require_at_least<int64_t>("heads", m.heads, 1);
  samples::require_at_least<int64_t>("stages", m.stages, 1);
  samples::require_at_least<int64_t>("eval-every", o.eval_every, 1);
  samples::require_at_least<int64_t>("eval-batches", o.eval_batches, 1);
  samples::require_at_least<int64_t>("generate", o.generate, 0);
  if (m.width < 1 || m.width % m.heads != 0) {
    throw samples::UsageError("--width must be a positive multiple of --heads (" + std::to_string(m.heads) + "), got " +
                              std::to_string(m.width));
  }
  if (m.layers % m.stages != 0) {
    throw samples::UsageError("--stages must divide --layers (" + std::to_string(m.layers) + "), got " +
                              std::to_string(m.stages));
  }
  if (m.stages > 1 && o.gradient_accumulation < m.stages) {
    throw samples::UsageError("--gradient-accumulation must be >= --stages (" + std::to_string(m.stages) +
                              ") for pipelined training, got " + std::to_string(o.gradient_accumulation));
  }
  if (!(m.dropout >= 0.0 && m.dropout < 1.0)) throw samples::UsageError("--dropout must be in [0, 1)");
  if (!(o.temperature > 0.0)) throw samples::UsageError("--temperature must be > 0");
  if (!(o.weight_decay >= 0.0)) throw samples::UsageError("--weight-decay must be >= 0");
  samples::require_at_least<int64_t>("warmup-steps", o.warmup_steps, 0);
  if (o.warmup_steps >= o.num_steps) {
    throw samples::UsageError("--warmup-steps must be < --num-steps (" + std::to_string(o.num_steps) + "), got " +
                              std::to_string(o.warmup_steps));
  }
  if (!(o.min_lr_ratio >= 0.0 && o.min_lr_ratio <= 1.0)) throw samples::UsageError("--min-lr-ratio must be in [0, 1]");
  if (!(o.clip >= 0.0)) throw samples::UsageError("--clip must be >= 0");
  if (o.rts && o.replication_factor < 2) throw samples::UsageError("--rts needs --replication-factor > 1");
}

/// A program of the model: IR, token and target streams, loss and correct-count outputs.
struct Program {
  plx::Ir ir;
  plx::Stream tokens, targets, loss, correct, logits;
  std::vector<plx::Tensor> params;
};

// Tokens and targets int32 [batch, context] in, the forward pass, the mean cross-entropy
// (nats per byte) and the count of correctly predicted bytes out.
Program build_forward(const Options& o, const std::vector<std::vector<float>>& weights, int64_t batch, int64_t replicas,
                      bool training, std::optional<plx::Tensor>& loss) {
  Program p{plx::Ir(replicas), {}, {}, {}, {}, {}, {}};
  GptBuilder gpt(p.ir, o.model, training);
  p.params = gpt.add_params(weights);
  auto [token_stream, tokens] = p.ir.h2d_stream("tokens", PLX_DTYPE_INT32, {batch, o.model.context});
  auto [target_stream, targets] = p.ir.h2d_stream("targets", PLX_DTYPE_INT32, {batch, o.model.context});
  p.tokens = token_stream;
  p.targets = target_stream;
  const plx::Tensor logits = gpt.logits(tokens);
  samples::gpt::StageScope last(p.ir, o.model, o.model.stages - 1);
  loss = p.ir.softmax_cross_entropy(logits, targets);
  p.loss = p.ir.d2h_stream("loss", *loss);
  p.correct = p.ir.d2h_stream("correct", samples::count_correct(p.ir, logits, targets));
  if (!training) p.logits = p.ir.d2h_stream("logits", logits);
  return p;
}

// AdamW's state of one parameter: exp_avg, exp_avg_sq (replica-sharded with --rts: the
// shards) and step, as variables.
struct AdamState {
  plx::Tensor m, v, step;
};

AdamState add_adam_state(plx::Ir& ir, const samples::gpt::ParamSpec& p, bool rts) {
  const std::vector<float> zeros(static_cast<size_t>(plx::numel(p.shape)), 0.0f);
  AdamState s;
  if (rts) {
    s.m = ir.replica_sharded_variable<float>(p.name + ".exp_avg", p.shape, zeros).second;
    s.v = ir.replica_sharded_variable<float>(p.name + ".exp_avg_sq", p.shape, zeros).second;
  } else {
    s.m = ir.variable<float>(p.name + ".exp_avg", p.shape, zeros);
    s.v = ir.variable<float>(p.name + ".exp_avg_sq", p.shape, zeros);
  }
  s.step = ir.variable<float>(p.name + ".step", {}, {0.0f});
  return s;
}

// The learning rate of the update that reads `step` (its count so far): warm-up, then
// cosine decay (lr_schedule), computed on the device so a schedule needs no recompiling.
plx::Tensor scheduled_lr(plx::Ir& ir, const Options& o, plx::Tensor step) {
  return ir.op1("lr_schedule", {step},
                {{"base_lr", o.learning_rate},
                 {"warmup_steps", o.warmup_steps},
                 {"total_steps", o.num_steps},
                 {"min_lr", o.learning_rate * o.min_lr_ratio}});
}

// AdamW of `w` (PyTorch's betas and eps) with the scheduled learning rate; returns w.
plx::Tensor adamw(plx::Ir& ir, const Options& o, plx::Tensor w, plx::Tensor grad, const AdamState& s, double decay) {
  return ir.op1("adamw_", {w, grad, s.m, s.v, s.step, scheduled_lr(ir, o, s.step)},
                {{"lr", o.learning_rate}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", decay}});
}

// The gradient each replica's update uses: the mean over replicas (with --rts, its shard
// of the mean: ZeRO stage 1), as DDP's all-reduce.
plx::Tensor reduced_gradient(plx::Ir& ir, const Options& o, plx::Tensor grad) {
  if (o.rts) return ir.reduce_scatter(grad, "mean");
  if (o.replication_factor > 1) return ir.all_reduce_(grad, "mean");
  return grad;
}

// The reduced gradients clipped to a global norm of --clip (PyTorch's clip_grad_norm_ after
// DDP's all-reduce): each stage sums the squares of its own gradients (over every replica's
// shard with --rts), stage 0 adds the stages' sums and sends the total back to every stage,
// which scales its gradients. On one device that is clip_grad_norm_ itself; pipelined, the
// stages' partial sums are rounded to float before they are added (docs/samples.md: the
// stated tolerance).
std::vector<plx::Tensor> clipped_gradients(plx::Ir& ir, const Options& o, const std::vector<samples::gpt::ParamSpec>& specs,
                                           std::vector<plx::Tensor> grads) {
  const auto stages = static_cast<size_t>(o.model.stages);
  std::vector<std::vector<size_t>> of_stage(stages);
  for (size_t i = 0; i < grads.size(); ++i) of_stage[static_cast<size_t>(specs[i].stage)].push_back(i);
  std::vector<plx::Tensor> sq_norm;
  for (size_t s = 0; s < stages; ++s) {
    samples::gpt::StageScope scope(ir, o.model, static_cast<int64_t>(s));
    std::vector<plx::Tensor> own;
    for (size_t i : of_stage[s]) own.push_back(grads[i]);
    sq_norm.push_back(ir.op1("global_sq_norm", own));
    if (o.rts) sq_norm.back() = ir.all_reduce(sq_norm.back(), "sum");
  }
  plx::Tensor total = sq_norm.front();
  {
    samples::gpt::StageScope scope(ir, o.model, 0);
    for (size_t s = 1; s < stages; ++s) total = ir.add(total, sq_norm[s]);
  }
  for (size_t s = 0; s < stages; ++s) {
    samples::gpt::StageScope scope(ir, o.model, static_cast<int64_t>(s));
    std::vector<plx::Tensor> inputs;
    for (size_t i : of_stage[s]) inputs.push_back(grads[i]);
    inputs.push_back(total);
    const std::vector<plx::Tensor> scaled = ir.op("clip_scale_", inputs, {{"max_norm", o.clip}});
    for (size_t k = 0; k < of_stage[s].size(); ++k) grads[of_stage[s][k]] = scaled[k];
  }
  return grads;
}

// One parameter's update with its (reduced) gradient: AdamW; with --rts on this replica's
// shard of the weight with its shard of the state, the updated shards all-gathered and
// copied into the weight.
void add_update(plx::Ir& ir, const Options& o, const samples::gpt::ParamSpec& p, plx::Tensor w, plx::Tensor grad) {
  const AdamState s = add_adam_state(ir, p, o.rts);
  const double decay = p.decay ? o.weight_decay : 0.0;
  if (!o.rts) {
    adamw(ir, o, w, grad, s, decay);
    return;
  }
  const plx::Tensor updated = adamw(ir, o, ir.replica_sharded_slice(w), grad, s, decay);
  ir.scaled_add_(w, ir.all_gather(updated), 0.0, 1.0);
}

// The training step: forward, autodiff, the gradients reduced and clipped, and each
// parameter's update in the stage the parameter lives in.
Program build_train(const Options& o, const std::vector<std::vector<float>>& weights) {
  std::optional<plx::Tensor> loss;
  Program p = build_forward(o, weights, o.batch_size, o.replication_factor, true, loss);
  const std::vector<samples::gpt::ParamSpec> specs = samples::gpt::gpt_param_specs(o.model);
  std::vector<plx::Tensor> grads = p.ir.autodiff(*loss, p.params);
  for (size_t i = 0; i < grads.size(); ++i) {
    samples::gpt::StageScope stage(p.ir, o.model, specs[i].stage);
    grads[i] = reduced_gradient(p.ir, o, grads[i]);
  }
  if (o.clip > 0) grads = clipped_gradients(p.ir, o, specs, grads);
  for (size_t i = 0; i < grads.size(); ++i) {
    samples::gpt::StageScope stage(p.ir, o.model, specs[i].stage);  // the update runs where the parameter lives
    add_update(p.ir, o, specs[i], p.params[i], grads[i]);
  }
  return p;
}

plx::SessionOptions session_options(const Options& o, plx::Stages& stages, int64_t device_iterations) {
  for (int64_t s = 0; s < o.model.stages; ++s) stages.add({"s" + std::to_string(s)}, s);
  plx::SessionOptions opts = samples::common_session_options(o);
  if (o.model.stages > 1) {
    stages.apply(opts);
    opts.execution_strategy = "pipelined";
  }
  opts.device_iterations = device_iterations;
  return opts;
}

// Mean loss (nats per byte) of the first eval_batches x batch validation windows, with the
// weights `weights`, on one replica.
double validation_loss(const Options& o, const plx::Text& text, const std::vector<std::vector<float>>& weights) {
  std::optional<plx::Tensor> loss;
  Options one = o;
  one.model.stages = 1;
  Program p = build_forward(one, weights, o.batch_size, 1, false, loss);
  plx::Stages stages;
  plx::SessionOptions opts = session_options(one, stages, o.eval_batches);
  plx::Session session(p.ir, opts);
  plx_loader_options lo = plx::Loader::default_options();
  lo.batch_size = o.batch_size;
  lo.steps_per_run = o.eval_batches;
  lo.shuffle = 0;
  plx::Loader loader(text, PLX_TEXT_VALIDATION, o.model.context, lo);
  const samples::TrainRun run(session, loader, p.tokens, p.targets, p.loss, p.correct);
  loader.begin_run(0, 0);
  run.run(session);
  double sum = 0;
  for (float l : run.losses()) sum += l;
  return sum / static_cast<double>(run.losses().size());
}

std::vector<std::vector<float>> read_weights(const plx::Session& s, const std::vector<plx::Tensor>& params) {
  std::vector<std::vector<float>> out;
  for (const plx::Tensor& t : params) out.push_back(s.read<float>(t));
  return out;
}

// Samples o.generate bytes after the first context bytes of the validation text, each
// from softmax(logits / temperature) of the last position, with mt19937_64(seed).
std::string generate(const Options& o, const plx::Text& text, const std::vector<std::vector<float>>& weights) {
  std::optional<plx::Tensor> loss;
  Options one = o;
  one.model.stages = 1;
  Program p = build_forward(one, weights, 1, 1, false, loss);
  plx::Session session(p.ir);
  const int64_t T = o.model.context;
  const std::string_view prompt = text.bytes(PLX_TEXT_VALIDATION).substr(0, static_cast<size_t>(T));
  std::vector<int32_t> window(prompt.begin(), prompt.end());
  for (int32_t& t : window) t = static_cast<unsigned char>(t);
  std::vector<int32_t> targets(static_cast<size_t>(T), 0);
  std::vector<float> logits(static_cast<size_t>(T * samples::gpt::kVocab));
  float loss_value = 0;
  int32_t correct = 0;
  std::mt19937_64 rng(o.seed);
  std::string out;
  for (int64_t i = 0; i < o.generate; ++i) {
    session.run({plx::HostArray(p.tokens, window.data(), session.host_shape(p.tokens)),
                 plx::HostArray(p.targets, targets.data(), session.host_shape(p.targets))},
                {plx::HostArray(p.logits, logits.data(), session.host_shape(p.logits)),
                 plx::HostArray(p.loss, &loss_value, session.host_shape(p.loss)),
                 plx::HostArray(p.correct, &correct, session.host_shape(p.correct))});
    const float* last = logits.data() + (T - 1) * samples::gpt::kVocab;
    std::vector<double> weights_of(static_cast<size_t>(samples::gpt::kVocab));
    const float top = *std::max_element(last, last + samples::gpt::kVocab);
    for (size_t k = 0; k < weights_of.size(); ++k) weights_of[k] = std::exp((last[k] - top) / o.temperature);
    std::discrete_distribution<int32_t> next(weights_of.begin(), weights_of.end());
    const int32_t token = next(rng);
    out.push_back(static_cast<char>(token));
    window.erase(window.begin());
    window.push_back(token);
  }
  return out;
}

// Where the training session keeps its bytes, per device (replica x stage): the arena
// (weights, optimizer state, activations), the resident variables among them, the planned
// peak, and the optimizer state kept in host memory.
nlohmann::json memory_report(const plx::Session& s) {
  nlohmann::json out = nlohmann::json::array();
  std::printf("memory per device (bytes): arena = variables + activations and scratch\n");
  for (size_t d = 0; d < s.num_devices(); ++d) {
    const plx_memory_stats m = s.memory_stats(d);
    std::printf("  device %zu: arena %zu, variables %zu, planned peak %zu, optimizer state on host %zu, remote "
                "buffers %zu\n",
                d, m.arena_bytes, m.variable_bytes, m.planned_peak_bytes, m.offloaded_bytes, m.remote_buffer_bytes);
    out.push_back({{"arena_bytes", m.arena_bytes},
                   {"variable_bytes", m.variable_bytes},
                   {"planned_peak_bytes", m.planned_peak_bytes},
                   {"offloaded_bytes", m.offloaded_bytes},
                   {"remote_buffer_bytes", m.remote_buffer_bytes}});
  }
  return out;
}

struct Trained {
  nlohmann::json memory, profile;
  std::vector<std::vector<float>> weights;
  std::vector<std::pair<int64_t, double>> validation;  // (step, loss)
  double train_loss = 0, seconds = 0;
  int64_t steps = 0;
};

Trained train(const Options& o, const plx::Text& text) {
  Program p = build_train(o, samples::gpt::initial_weights(o.model, o.seed));
  plx::Stages stages;
  plx::SessionOptions opts = session_options(o, stages, o.device_iterations);
  opts.gradient_accumulation = o.gradient_accumulation;
  opts.offload_optimizer_state = o.offload_optimiser ? 1 : 0;
  plx::Session session(p.ir, opts);
  Trained result;
  result.memory = memory_report(session);
  plx_loader_options lo = plx::Loader::default_options();
  lo.batch_size = o.batch_size;
  lo.replicas = o.replication_factor;
  lo.steps_per_run = o.device_iterations * o.gradient_accumulation;
  lo.seed = o.seed;
  lo.workers = static_cast<int32_t>(o.loader_workers);
  plx::Loader loader(text, PLX_TEXT_TRAIN, o.model.context, lo);
  samples::Checkpointing checkpointing(o.checkpoint, o.seed, loader.runs_per_epoch());
  samples::DataPosition at = checkpointing.start(session);
  const samples::TrainRun run(session, loader, p.tokens, p.targets, p.loss, p.correct);
  const int64_t first_step = session.step(), runs = o.runs_left(first_step);
  samples::Progress bar("train", runs);
  double recent = 0, eval_seconds = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < runs; ++r) {
    if (at.run >= loader.runs_per_epoch()) at = {at.epoch + 1, 0};
    loader.begin_run(at.epoch, at.run++);
    run.run(session);
    double sum = 0;
    for (float l : run.losses()) sum += l;
    recent = sum / static_cast<double>(run.losses().size());
    checkpointing.after_run(session, at);
    const int64_t step = session.step();
    if (step % o.eval_every < o.device_iterations || r + 1 == runs) {
      const auto eval_start = std::chrono::steady_clock::now();
      result.validation.emplace_back(step, validation_loss(o, text, read_weights(session, p.params)));
      eval_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - eval_start).count();
    }
    char suffix[96];
    std::snprintf(suffix, sizeof suffix, "step %lld train %.3f val %.3f nats/byte", static_cast<long long>(step), recent,
                  result.validation.empty() ? 0.0 : result.validation.back().second);
    bar.update(r + 1, suffix);
  }
  // Training time only, as the PyTorch twin counts it: the validation runs are left out.
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - eval_seconds;
  result.steps = session.step() - first_step;
  result.train_loss = recent;
  checkpointing.finish(session, at);
  result.weights = read_weights(session, p.params);
  if (o.profile && result.steps > 0) result.profile = samples::profile_json(samples::write_profile(o, session, "training"));
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const samples::po::options_description own = describe(o);
  if (auto exit_code = samples::parse_sample_options(argc, argv, "char_gpt", "usage: char_gpt [options]", o, kFeatures,
                                                     own, [&] { check(o); })) {
    return *exit_code;
  }
  try {
    const plx::Text text(o.corpus);
    std::printf("corpus %s: %lld documents, %zu training and %zu validation bytes\n", o.corpus.c_str(),
                static_cast<long long>(text.documents()), text.bytes(PLX_TEXT_TRAIN).size(),
                text.bytes(PLX_TEXT_VALIDATION).size());
    const Trained t = train(o, text);
    const double tokens_per_second = static_cast<double>(t.steps * o.batch_size * o.gradient_accumulation *
                                                         o.replication_factor * o.model.context) /
                                     t.seconds;
    std::printf("validation loss %.4f nats/byte after %lld steps (train %.4f; %.0f tokens/s)\n",
                t.validation.back().second, static_cast<long long>(t.steps), t.train_loss, tokens_per_second);
    const std::string text_out = generate(o, text, t.weights);
    if (o.generate > 0) std::printf("--- sampled (temperature %g) ---\n%s\n---\n", o.temperature, text_out.c_str());
    samples::write_weights(o.weights_out, t.weights);
    nlohmann::json validation = nlohmann::json::array();
    for (const auto& [step, loss] : t.validation) validation.push_back({{"step", step}, {"loss", loss}});
    nlohmann::json options = samples::options_json(o, kFeatures);
    options.update({{"warmup_steps", o.warmup_steps}, {"min_lr_ratio", o.min_lr_ratio}, {"clip", o.clip},
                    {"weight_decay", o.weight_decay}, {"context", o.model.context}, {"layers", o.model.layers}, {"width", o.model.width},
                    {"heads", o.model.heads}, {"dropout", o.model.dropout}, {"stages", o.model.stages},
                    {"rts", o.rts}, {"offload_optimiser", o.offload_optimiser}});
    nlohmann::json metrics = {{"options", options},          {"validation", validation},
                              {"train_loss", t.train_loss},   {"steps", t.steps},
                              {"memory", t.memory},           {"tokens_per_second", tokens_per_second}};
    if (o.profile) metrics["profile"] = {{"training", t.profile}};
    samples::write_metrics(o.metrics_out, metrics);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "char_gpt: %s\n", e.what());
    return 1;
  }
  return 0;
}
