// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/saturation_mask.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "kernels/channel_reduce.h"
#include "kernels/magnitude_bits.h"
#include "kernels/mx_element.h"
#include "kernels/nvfp4.h"
#include "kernels/nvfp4_block.h"
#include "kernels/nvfp4_e5m3.h"

namespace ql {
namespace {

using namespace ql::kernels;

// Calls f(offset, length) for every block of `block` elements along the rows of a [rows, cols]
// buffer (the last block of a row may be short, as the kernels pad it).
template <class F>
void for_each_row_block(int64_t rows, int64_t cols, int64_t block, const F& f) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; c += block) f(r * cols + c, std::min(block, cols - c));
}

void nvfp4_saturated(const float* x, bool* out, int64_t rows, int64_t cols, float fixed_amax) {
    // g and the block denominators exactly as nvfp4_fake_quant computes them (format_codec.cpp
    // nvfp4_g, kernels/nvfp4.cpp); E2M1 saturates what exceeds 6 after the division by d.
    const float amax = std::isnan(fixed_amax) ? finite_absmax(x, rows * cols) : fixed_amax;
    const float g = nvfp4_global_scale(amax);
    const float six_g = 6.0f * g;
    const float max_element = E2M1::max_finite();
    for_each_row_block(rows, cols, kNvfp4Block, [&](int64_t off, int64_t len) {
        const float d = nvfp4_denominator(nvfp4_block_scale(statistic_of<FiniteAbsmax>(x + off, len).value(), six_g), g);
        for (int64_t i = off; i < off + len; ++i) out[i] = d != 0.0f && abs_bits(x[i] / d) > max_element;
    });
}

void nvfp4_e5m3_saturated(const float* x, bool* out, int64_t rows, int64_t cols) {
    // The block denominators as nvfp4_e5m3_fake_quant computes them (kernels/nvfp4_e5m3.cpp): a
    // block scale rounded down (UE5M3's mantissa does not carry) saturates its largest elements.
    const float max_element = E2M1::max_finite();
    for_each_row_block(rows, cols, kNvfp4E5m3Block, [&](int64_t off, int64_t len) {
        const float d = nvfp4_e5m3_denominator(statistic_of<FiniteAbsmax>(x + off, len).value());
        for (int64_t i = off; i < off + len; ++i) out[i] = d != 0.0f && abs_bits(x[i] / d) > max_element;
    });
}

template <class El>
void mx_saturated(const float* x, bool* out, int64_t rows, int64_t cols, int64_t block, MxScaleRule rule) {
    // The block scale as mx_fake_quant computes it (kernels/mx.cpp); elements arrive scaled by
    // the exact reciprocal 2^-e and saturate above the element's largest value.
    const float inv_max = mx_inverse_max<El>();
    for_each_row_block(rows, cols, block, [&](int64_t off, int64_t len) {
        const MxBlockScale k = mx_block_scale(mx_scale_byte<El>(statistic_of<AnyAbsmax>(x + off, len).value(), rule, inv_max));
        for (int64_t i = off; i < off + len; ++i) out[i] = !k.nan && abs_bits(x[i] * k.rcp) > El::max_element();
    });
}

// Whether the quantizer uses spec.fixed_amax as its one per-tensor amax (format_codec.cpp
// channel_amax: only when there is a single channel).
bool uses_fixed_amax(const QuantSpec& s, const std::vector<int64_t>& shape) {
    if (std::isnan(s.fixed_amax)) return false;
    if (s.granularity == Granularity::Tensor) return true;
    return s.granularity == Granularity::Channel && (shape.empty() || shape[s.axis] == 1);
}

}  // namespace

at::Tensor saturated_elements(const at::Tensor& x, const QuantSpec& spec) {
    if (!x.is_floating_point()) throw UserError("saturation mask needs a floating-point tensor, got " + std::string(x.dtype().name()));
    const std::string& fam = spec.info->family;
    if (fam == "gguf")
        throw UserError("clip_gradient is not available for " + spec.info->name +
                        ": GGUF blocks clamp the side opposite their signed maximum, which is not modelled; "
                        "use clip_gradient = false");
    const at::Tensor xd = x.detach();
    const std::vector<int64_t> shape = shape_of(xd);
    if ((fam == "int" || fam == "fp8") && uses_fixed_amax(spec, shape)) return at::abs(xd.to(at::kFloat)) > spec.fixed_amax;
    if (fam != "nvfp4" && fam != "nvfp4_e5m3" && fam != "mx") return at::zeros(xd.sizes(), xd.options().dtype(at::kBool));

    const at::Tensor c = xd.to(at::kCPU, at::kFloat).contiguous();
    at::Tensor out = at::zeros(c.sizes(), c.options().dtype(at::kBool));
    const int64_t n = c.numel();
    if (n > 0) {
        const int64_t cols = shape.empty() ? 1 : shape.back();
        const int64_t rows = n / cols;
        const float* px = c.data_ptr<float>();
        bool* po = out.data_ptr<bool>();
        if (fam == "nvfp4") {
            nvfp4_saturated(px, po, rows, cols, spec.fixed_amax);
        } else if (fam == "nvfp4_e5m3") {
            nvfp4_e5m3_saturated(px, po, rows, cols);
        } else {
            const MxScaleRule rule = spec.mx_round_up ? MxScaleRule::RoundUp : MxScaleRule::Floor;
            visit_mx_element(mx_element(spec.info->name),
                             [&](auto el) { mx_saturated<decltype(el)>(px, po, rows, cols, spec.block, rule); });
        }
    }
    return out.to(xd.device());
}

}  // namespace ql
