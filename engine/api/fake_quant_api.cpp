// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/fake_quant_api.h"

#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/formats/format_codec.h"

namespace ql {

FakeQuantResult run_fake_quant(const FakeQuantRequest& request) {
    const NdArray& in = request.input;
    if (in.dtype != DType::Float32) throw UserError("input must be float32, got " + dtype_name(in.dtype));
    QuantSpec spec = resolve_spec(request.options, in.shape);
    if (!request.importance.empty()) set_importance(spec, request.importance, in.shape, request.importance_source);
    FakeQuantResult r;
    r.format = spec.info->name;
    r.granularity = spec.granularity == Granularity::Tensor    ? "tensor"
                    : spec.granularity == Granularity::Channel ? "channel"
                    : spec.granularity == Granularity::Group   ? "group"
                                                               : "block";
    r.block_size = spec.block;
    r.axis = spec.axis;
    r.values = NdArray::zeros(DType::Float32, in.shape);
    const float* x = in.as<float>();
    fake_quantize_buffer(x, r.values.as<float>(), in.shape, spec);

    double signal = 0, noise = 0;
    int64_t finite = 0;
    const float* y = r.values.as<float>();
    for (int64_t i = 0; i < in.numel(); ++i) {
        if (!std::isfinite(x[i])) {
            ++r.nonfinite_inputs;
            continue;
        }
        const double d = static_cast<double>(y[i]) - x[i];
        signal += static_cast<double>(x[i]) * x[i];
        noise += d * d;
        ++finite;
    }
    r.mse = finite ? noise / static_cast<double>(finite) : 0.0;
    r.sqnr_db = noise > 0 ? 10.0 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();

    // Encoding also yields what --json reports: NVFP4's global scale, zero points, NF4's offset,
    // LLM.int8()'s outlier columns.
    const bool wanted = request.want_codes || request.want_scales || request.want_packed;
    if (wanted || spec.info->family == "nvfp4" || spec.info->family == "llm_int8" || spec.asymmetric || spec.double_quant) {
        EncodedTensor e = encode_buffer(x, in.shape, spec);
        r.global_scale = e.global_scale;
        r.zero_points = e.zero_points;
        r.offset = e.offset;
        r.outlier_columns = e.outlier_columns;
        if (request.want_codes) r.codes = e.codes;
        if (request.want_scales) r.scales = e.scales;
        if (request.want_packed) r.packed = pack_encoded(e, in.shape, spec);
    }
    return r;
}

}  // namespace ql
