// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/exact_weight_codes.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/quant/layer_quantizer.h"
#include "kernels/integer_step.h"
#include "kernels/minifloat.h"
#include "kernels/mx_element.h"
#include "kernels/nvfp4.h"
#include "kernels/nvfp4_block.h"
#include "kernels/scaled_fp8_element.h"

namespace ql {

EncodedTensor exact_weight_codes(LayerQuantizer& l, const std::vector<int64_t>& shape) {
    EncodedTensor e = l.encode_weight();
    const QuantSpec spec = l.weight_spec();
    const at::Tensor q = l.quantized_weight().reshape(shape).to(at::kCPU, at::kFloat).contiguous();
    const float* want = q.data_ptr<float>();
    const int64_t out = shape[0], in = shape[1], n = out * in;
    auto same = [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); };
    std::vector<float> y = decode_buffer(e, shape, spec);
    if (std::memcmp(y.data(), want, static_cast<size_t>(n) * 4) == 0) return e;
    const std::string& fam = spec.info->family;
    uint8_t* codes = e.codes.as<uint8_t>();
    const float* scales = e.scales.as<float>();
    const int64_t per_row = e.scales.numel() / std::max<int64_t>(out, 1);  // scales per row (1: channel)
    bool repaired = false;
    for (int64_t i = 0; i < n; ++i) {
        if (same(y[static_cast<size_t>(i)], want[i])) continue;
        const int64_t r = i / in, c = i % in;
        const float v = want[i];
        if (fam == "int") {
            const int64_t k = spec.granularity == Granularity::Group ? r * per_row + c / spec.block
                                                                     : (e.scales.numel() == 1 ? 0 : r);
            const kernels::IntParams p{scales[k], spec.asymmetric ? e.zero_points[static_cast<size_t>(k)] : 0.0f};
            codes[i] = kernels::IntStep::make(p, kernels::IntFormat{spec.info->element_bits, spec.asymmetric}).encode(v);
        } else if (fam == "fp8") {
            codes[i] = kernels::fp8_encode_element<kernels::E4M3>(v, scales[e.scales.numel() == 1 ? 0 : r]);
        } else if (fam == "nvfp4") {
            const uint8_t s8 = e.raw_scales[static_cast<size_t>(r * per_row + c / kernels::kNvfp4Block)];
            codes[i] = kernels::nvfp4_code_element(v, kernels::nvfp4_denominator_of_code(s8, *e.global_scale));
        } else if (fam == "mx") {
            const kernels::MxBlockScale k = kernels::mx_block_scale(e.raw_scales[static_cast<size_t>(r * per_row + c / 32)]);
            codes[i] = kernels::mx_code_element<kernels::MxFloatElement<kernels::E2M1>>(v, k);
        }
        repaired = true;
    }
    if (repaired) y = decode_buffer(e, shape, spec);
    for (int64_t i = 0; i < n; ++i)
        if (!same(y[static_cast<size_t>(i)], want[i]))
            throw UserError("layer " + l.name() + ": the stored codes do not reproduce the quantized weight at element " +
                            std::to_string(i) + " (" + std::to_string(want[i]) + " vs " + std::to_string(y[static_cast<size_t>(i)]) + ")");
    return e;
}

}  // namespace ql
