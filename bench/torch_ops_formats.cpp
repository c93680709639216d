// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/torch_ops_formats.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include "kernels/nf4.h"

namespace ql::bench {
namespace {

// Round |t| onto a minifloat grid (M mantissa bits, smallest normal exponent emin), ties to
// even, saturating at max_value; sign restored. frexp gives floor(log2|t|) exactly.
at::Tensor round_minifloat(const at::Tensor& t, int man_bits, int emin, double max_value) {
    const at::Tensor a = t.abs();
    auto fr = at::frexp(a);
    at::Tensor e = (std::get<1>(fr) - 1).clamp_min(emin);
    const at::Tensor ulp = at::ldexp(at::ones_like(a), e - man_bits);
    const at::Tensor q = at::round(a / ulp).mul_(ulp).clamp_max_(max_value);
    return at::copysign(q, t);
}

at::Tensor nvfp4(const at::Tensor& x) {
    const at::Tensor g = x.abs().amax() / (6.0 * 448.0);
    const at::Tensor b = x.view({-1, 16});
    at::Tensor s = b.abs().amax(-1, true) / (g * 6.0);
    s = at::where(s == 0, at::ones_like(s), s);
    const at::Tensor d = round_minifloat(s, 3, -6, 448.0) * g;
    const at::Tensor y = round_minifloat(b / d, 1, 0, 6.0) * d;
    return at::where(d == 0, at::zeros_like(y), y).view(x.sizes());
}

at::Tensor mxfp4(const at::Tensor& x) {
    const at::Tensor b = x.view({-1, 32});
    const at::Tensor amax = b.abs().amax(-1, true);
    const at::Tensor e = (std::get<1>(at::frexp(amax)) - 1 - 2).clamp(-127, 127);
    const at::Tensor X = at::ldexp(at::ones_like(amax), e);
    return (round_minifloat(b / X, 1, 0, 6.0) * X).view(x.sizes());
}

at::Tensor fp8_e4m3(const at::Tensor& x) {
    at::Tensor scale = x.abs().amax() / 448.0;
    scale = at::where(scale == 0, at::ones_like(scale), scale);
    return round_minifloat(x / scale, 3, -6, 448.0) * scale;
}

at::Tensor int4_g128(const at::Tensor& x) {
    const at::Tensor b = x.view({-1, 128});
    const at::Tensor scale = b.abs().amax(-1, true) / 7.0;
    const at::Tensor q = at::round(b / scale).clamp_(-7, 7);
    const at::Tensor y = q * scale;
    return at::where(scale == 0, at::zeros_like(y), y).view(x.sizes());
}

at::Tensor nf4(const at::Tensor& x) {
    static const at::Tensor book = at::tensor(std::vector<float>(kernels::kNf4Codebook, kernels::kNf4Codebook + 16));
    static const at::Tensor thresholds =
        at::tensor(std::vector<float>(kernels::nf4_thresholds(), kernels::nf4_thresholds() + 15));
    const at::Tensor b = x.view({-1, 64});
    const at::Tensor absmax = b.abs().amax(-1, true);
    const at::Tensor s = (b * (1.0 / absmax.clamp_min(1e-38))).clamp_(-1, 1);
    // bucketize(right=false) counts thresholds strictly below s: the argmin's index.
    const at::Tensor idx = at::bucketize(s, thresholds);
    return (book.index({idx}) * absmax).view(x.sizes());
}

}  // namespace

const std::vector<std::string>& torch_ops_formats() {
    static const std::vector<std::string> f = {"nvfp4", "mxfp4", "fp8_e4m3", "int4", "nf4"};
    return f;
}

at::Tensor torch_ops_fake_quant(const at::Tensor& x, const std::string& format) {
    if (format == "nvfp4") return nvfp4(x);
    if (format == "mxfp4") return mxfp4(x);
    if (format == "fp8_e4m3") return fp8_e4m3(x);
    if (format == "int4") return int4_g128(x);
    if (format == "nf4") return nf4(x);
    throw std::invalid_argument("no composed-op version of " + format);
}

}  // namespace ql::bench
