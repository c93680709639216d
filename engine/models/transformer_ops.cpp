// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/transformer_ops.h"

#include "engine/models/matrix_products.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/where.h>

#include <cmath>
#include <limits>

#include "engine/core/errors.h"

namespace ql {

at::Tensor layer_norm(const at::Tensor& x, const NormParams& norm, double eps) {
    return at::layer_norm(x, {x.size(-1)}, norm.weight, norm.bias, eps);
}

at::Tensor rms_norm(const at::Tensor& x, const NormParams& norm, double eps) {
    const at::Tensor x32 = x.to(at::kFloat);
    const at::Tensor variance = x32.pow(2).mean(-1, /*keepdim=*/true);
    const at::Tensor normalized = x32 * at::rsqrt(variance + eps);
    return norm.weight * normalized.to(x.scalar_type());
}

at::Tensor gemma_rms_norm(const at::Tensor& x, const NormParams& norm, double eps) {
    const at::Tensor x32 = x.to(at::kFloat);
    const at::Tensor normalized = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return (normalized * (norm.weight.to(at::kFloat) + 1.0)).to(x.scalar_type());
}

at::Tensor activate(const at::Tensor& x, const std::string& activation) {
    if (activation == "silu" || activation == "swish") return at::silu(x);
    if (activation == "gelu") return at::gelu(x);
    if (activation == "gelu_new" || activation == "gelu_pytorch_tanh") return at::gelu(x, "tanh");
    if (activation == "relu") return at::relu(x);
    throw UserError("activation '" + activation + "' is not supported");
}

at::Tensor rope_inverse_frequencies(const ModelConfig& c) {
    const int64_t dim = c.head_dim;
    // inv_freq = 1 / base ** (arange(0, dim, 2).float() / dim), all in float32 like transformers.
    const at::Tensor exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
    at::Tensor inv_freq = at::reciprocal(at::pow(c.rope_theta, exponents));
    const RopeScaling& s = c.rope_scaling;
    if (s.type == "linear") return inv_freq / s.factor;
    if (s.type != "llama3") return inv_freq;
    // transformers _compute_llama3_parameters (Llama 3.1 reference implementation).
    const double old_context = static_cast<double>(s.original_max_positions);
    const double low_freq_wavelen = old_context / s.low_freq_factor;
    const double high_freq_wavelen = old_context / s.high_freq_factor;
    const at::Tensor wavelen = at::reciprocal(inv_freq) * (2.0 * M_PI);
    at::Tensor scaled = at::where(wavelen > low_freq_wavelen, inv_freq / s.factor, inv_freq);
    const at::Tensor smooth =
        (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    const at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
    const at::Tensor medium = (wavelen >= high_freq_wavelen).logical_and(wavelen <= low_freq_wavelen);
    return at::where(medium, smoothed, scaled);
}

RopeTables rope_tables(const ModelConfig& c, int64_t seq_len, at::Device device, int64_t start) {
    const at::Tensor inv_freq = rope_inverse_frequencies(c).to(device);
    const at::Tensor positions = at::arange(start, start + seq_len, at::TensorOptions(device).dtype(at::kLong)).to(at::kFloat);
    const at::Tensor freqs = positions.unsqueeze(1) * inv_freq.unsqueeze(0);  // [T, D/2]
    const at::Tensor emb = at::cat({freqs, freqs}, -1);
    return {emb.cos(), emb.sin()};
}

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope) {
    const int64_t half = x.size(-1) / 2;
    const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
    return x * rope.cos + rotated * rope.sin;
}

at::Tensor causal_visibility(int64_t t, int64_t sliding_window, const at::TensorOptions& options, int64_t past) {
    const at::Tensor i = at::arange(past, past + t, options.dtype(at::kLong)).unsqueeze(1);
    const at::Tensor j = at::arange(past + t, options.dtype(at::kLong)).unsqueeze(0);
    at::Tensor visible = j <= i;
    if (sliding_window > 0) visible = visible.logical_and(j > i - sliding_window);
    return visible;
}

at::Tensor split_heads(const at::Tensor& x, int64_t heads, int64_t head_dim) {
    return x.reshape({x.size(0), x.size(1), heads, head_dim}).transpose(1, 2);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& visible,
                     double scale, double softcap) {
    // Heads that share a key / value head (grouped-query attention) read it in place.
    at::Tensor scores = head_product(q, k, /*m_transposed=*/true, scale);
    if (softcap > 0) scores = at::tanh(scores / softcap) * softcap;
    scores = scores.masked_fill(visible.logical_not(), std::numeric_limits<float>::lowest());
    const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(v.scalar_type());
    const at::Tensor out = head_product(probs, v, /*m_transposed=*/false, 1.0);  // [B, H, T, D]
    return out.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

void check_token_ids(const at::Tensor& ids, int64_t vocab, int64_t max_positions, const std::string& what) {
    if (ids.scalar_type() != at::kLong || ids.dim() != 2)
        throw UserError(what + ": token ids must be int64 [batch, seq]");
    if (ids.size(0) == 0 || ids.size(1) == 0) throw UserError(what + ": empty batch of token ids");
    if (max_positions > 0 && ids.size(1) > max_positions)
        throw UserError(what + ": sequence of " + std::to_string(ids.size(1)) + " tokens is longer than the " +
                        std::to_string(max_positions) + " positions the model has");
    const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    if (lo < 0 || hi >= vocab)
        throw UserError(what + ": token id " + std::to_string(lo < 0 ? lo : hi) + " is outside the vocabulary [0, " +
                        std::to_string(vocab) + ")");
}

}  // namespace ql
