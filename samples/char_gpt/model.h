// A decoder-only transformer over bytes (issue 20; nanoGPT's model.py, GPT-2's layout):
//   token embedding wte [256, C] + position embedding wpe [T, C]
//   N pre-norm blocks:  x += proj(attention(ln_1(x)));  x += mlp(ln_2(x))
//     attention: q, k, v = linear(h) split into H heads of C / H; softmax(q k^T / sqrt(C / H)
//                + causal mask) v, dropout on the attention weights and on the output
//     mlp:       linear(C, 4C) -> gelu (tanh approximation) -> linear(4C, C) -> dropout
//   ln_f, then the output layer: lm_head [C, 256], or wte^T when tied
// Linear weights are stored [in, out] (x W + b). Initialisation as nanoGPT's: weights and
// embeddings ~ N(0, 0.02), the two projections into the residual stream ~
// N(0, 0.02 / sqrt(2 N)), biases 0, layer norms weight 1 and bias 0; drawn from an
// mt19937_64 seeded by --seed in the order of gpt_param_specs().
// Stages: with S > 1 stages the embeddings and the first N / S blocks form stage "s0", the
// next N / S blocks "s1", ..., and ln_f, the output layer and the loss the last stage
// (seed 003's Blocks; N must be a multiple of S).
#pragma once

#include <plexus/plexus.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace samples::gpt {

inline constexpr int64_t kVocab = 256;  ///< byte tokens

/// The model's shape and regularisation.
struct GptConfig {
  int64_t context = 64;  ///< T: tokens per sample
  int64_t layers = 4;    ///< N blocks
  int64_t width = 128;   ///< C
  int64_t heads = 4;     ///< H; C % H == 0
  double dropout = 0.1;  ///< on attention weights, attention output and mlp output (training only)
  bool tied = false;     ///< output layer = wte^T
  int64_t stages = 1;    ///< pipeline stages; layers % stages == 0
};

/// One parameter: name, shape, initial standard deviation (0: constant `fill`), and
/// whether AdamW decays it (matrices and embeddings, as nanoGPT's configure_optimizers).
struct ParamSpec {
  std::string name;
  plx::Shape shape;
  float stddev = 0.0f;
  float fill = 0.0f;
  bool decay = false;
  int64_t stage = 0;  ///< the pipeline stage whose ops use it (and update it)
};

/// Every parameter in order: wte, wpe, the blocks' (ln_1, attn q/k/v/proj, ln_2, mlp
/// fc/proj; weight then bias), ln_f, lm_head (untied only).
inline std::vector<ParamSpec> gpt_param_specs(const GptConfig& c) {
  const int64_t C = c.width;
  const float std = 0.02f, residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(c.layers));
  int64_t stage = 0;
  std::vector<ParamSpec> p{{"wte", {kVocab, C}, std, 0, true, 0}, {"wpe", {c.context, C}, std, 0, true, 0}};
  auto norm = [&](const std::string& n) {
    p.push_back({n + ".weight", {C}, 0, 1, false, stage});
    p.push_back({n + ".bias", {C}, 0, 0, false, stage});
  };
  auto linear = [&](const std::string& n, int64_t in, int64_t out, float s) {
    p.push_back({n + ".weight", {in, out}, s, 0, true, stage});
    p.push_back({n + ".bias", {out}, 0, 0, false, stage});
  };
  for (int64_t l = 0; l < c.layers; ++l) {
    stage = l / (c.layers / c.stages);
    const std::string b = "h" + std::to_string(l);
    norm(b + ".ln_1");
    for (const char* m : {".attn.q", ".attn.k", ".attn.v"}) linear(b + m, C, C, std);
    linear(b + ".attn.proj", C, C, residual_std);
    norm(b + ".ln_2");
    linear(b + ".mlp.fc", C, 4 * C, std);
    linear(b + ".mlp.proj", 4 * C, C, residual_std);
  }
  stage = c.stages - 1;
  norm("ln_f");
  if (!c.tied) p.push_back({"lm_head.weight", {C, kVocab}, std, 0, true, stage});
  return p;
}

/// Initial values of gpt_param_specs(c), drawn in order from mt19937_64(seed).
inline std::vector<std::vector<float>> initial_weights(const GptConfig& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<float>> out;
  for (const ParamSpec& s : gpt_param_specs(c)) {
    std::vector<float>& v = out.emplace_back(static_cast<size_t>(plx::numel(s.shape)), s.fill);
    if (s.stddev == 0.0f) continue;
    std::normal_distribution<float> normal(0.0f, s.stddev);
    for (float& x : v) x = normal(rng);
  }
  return out;
}

/// The ops added while it lives go to pipeline stage `s` (block "s<s>"; seed 003's
/// Block, reopened by name), or nowhere special with one stage.
class StageScope {
 public:
  StageScope(plx::Ir& ir, const GptConfig& c, int64_t s) {
    if (c.stages > 1) block_.emplace(ir, "s" + std::to_string(s));
  }

 private:
  std::optional<plx::Block> block_;
};

/// Builds the forward pass into an IR; one object per IR.
class GptBuilder {
 public:
  GptBuilder(plx::Ir& ir, const GptConfig& c, bool training) : ir_(ir), c_(c), training_(training) {}

  /// Adds the parameters as variables holding `weights` (initial_weights' layout).
  std::vector<plx::Tensor> add_params(const std::vector<std::vector<float>>& weights) {
    const std::vector<ParamSpec> specs = gpt_param_specs(c_);
    for (size_t i = 0; i < specs.size(); ++i) params_.push_back(ir_.variable<float>(specs[i].name, specs[i].shape, weights[i]));
    return params_;
  }

  /// Logits [B, T, 256] of tokens int32 [B, T]. Add the loss inside StageScope(ir, c,
  /// c.stages - 1), the last stage.
  plx::Tensor logits(plx::Tensor tokens) {
    next_ = 0;
    const plx::Tensor wte = param(), wpe = param();
    plx::Tensor x;
    {
      StageScope s0(ir_, c_, 0);
      x = ir_.add(ir_.op1("gather", {wte, tokens}), wpe);
    }
    for (int64_t l = 0; l < c_.layers; ++l) {
      StageScope stage(ir_, c_, l / (c_.layers / c_.stages));
      x = block(x);
    }
    StageScope last(ir_, c_, c_.stages - 1);
    x = layer_norm(x);
    return c_.tied ? ir_.op1("batch_matmul", {x, wte}, {{"transpose_b", true}})
                   : ir_.op1("batch_matmul", {x, param()});
  }

 private:
  plx::Tensor param() { return params_.at(next_++); }

  plx::Tensor linear(plx::Tensor x) {
    const plx::Tensor w = param(), b = param();
    return ir_.add(ir_.op1("batch_matmul", {x, w}), b);
  }

  plx::Tensor layer_norm(plx::Tensor x) {
    const plx::Tensor w = param(), b = param();
    return ir_.op1("layer_norm", {x, w, b});
  }

  plx::Tensor dropout(plx::Tensor x) {
    if (!training_ || c_.dropout == 0.0) return x;
    return ir_.op1("dropout", {x}, {{"p", c_.dropout}});
  }

  // [B, T, C] -> [B, H, T, C / H]
  plx::Tensor heads(plx::Tensor x) {
    return ir_.transpose(ir_.reshape(x, {-1, c_.context, c_.heads, c_.width / c_.heads}), {0, 2, 1, 3});
  }

  plx::Tensor causal_mask() {
    std::vector<uint8_t> mask(static_cast<size_t>(c_.context * c_.context));
    for (int64_t i = 0; i < c_.context; ++i) {
      for (int64_t j = 0; j <= i; ++j) mask[static_cast<size_t>(i * c_.context + j)] = 1;
    }
    return ir_.constant<uint8_t>({c_.context, c_.context}, mask);
  }

  plx::Tensor attention(plx::Tensor h) {
    const plx::Tensor q = heads(linear(h)), k = heads(linear(h)), v = heads(linear(h));
    const float scale = 1.0f / std::sqrt(static_cast<float>(c_.width / c_.heads));
    plx::Tensor att = ir_.mul(ir_.op1("batch_matmul", {q, k}, {{"transpose_b", true}}), ir_.scalar(scale));
    att = ir_.op1("where", {causal_mask(), att, ir_.scalar(-1e9f)});
    att = dropout(ir_.op1("softmax", {att}, {{"axis", int64_t{-1}}}));
    plx::Tensor y = ir_.transpose(ir_.op1("batch_matmul", {att, v}), {0, 2, 1, 3});
    y = ir_.reshape(y, {-1, c_.context, c_.width});
    return dropout(linear(y));
  }

  plx::Tensor block(plx::Tensor x) {
    x = ir_.add(x, attention(layer_norm(x)));
    const plx::Tensor h = layer_norm(x);
    return ir_.add(x, dropout(linear(ir_.gelu(linear(h)))));
  }

  plx::Ir& ir_;
  const GptConfig c_;
  const bool training_;
  std::vector<plx::Tensor> params_;
  size_t next_ = 0;
};

}  // namespace samples::gpt
