// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/loftq.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/quant/quant_plan.h"

namespace ql {

LoftqReport loftq_initialise(QuantizedModel& base, LoraAdapters& adapters, int64_t iterations) {
    if (iterations < 1) throw UserError("loftq: the iteration count must be positive");
    const auto t0 = std::chrono::steady_clock::now();
    c10::NoGradGuard no_grad;
    LoftqReport report;
    const double s = adapters.scaling();
    const double root = std::sqrt(s);
    const int64_t r = adapters.settings().rank;
    for (LoraLayer& l : adapters.layers()) {
        LayerQuantizer* q = base.find(l.module);
        if (!q || !q->weight_configured()) continue;
        if (q->pre_quant_scale().defined() || l.layer->input_rotation)
            throw UserError("loftq: " + l.module + " has a pre_quant_scale or an online rotation; LoftQ needs a plain "
                            "quantized weight (a max / RTN recipe without rotation)");
        const at::Tensor w = l.layer->weight.detach().to(at::kFloat).clone();
        const std::vector<int64_t> shape = weight_matrix_shape(*l.layer);
        const QuantSpec spec = q->weight_spec();
        const auto quantize = [&](const at::Tensor& x) { return fake_quantize(x.reshape(shape), spec).view(w.sizes()); };
        const double norm = std::max(w.norm().item<double>(), 1e-30);
        LoftqLayer row;
        row.module = l.module;
        row.base_error = (w - quantize(w)).norm().item<double>() / norm;
        at::Tensor residual_target = w;  // W - L R of the previous iteration
        at::Tensor qw, left, right;
        for (int64_t i = 0; i < iterations; ++i) {
            qw = quantize(residual_target);
            // torch.linalg.svd(res, full_matrices=False); L = U sqrt(S)[:, :r], R = sqrt(S)[:r] Vh.
            const auto [u, sv, vh] = at::linalg_svd(w - qw, /*full_matrices=*/false);
            const int64_t k = std::min<int64_t>(r, sv.size(0));
            const at::Tensor root_s = sv.slice(0, 0, k).sqrt();
            left = u.slice(1, 0, k) * root_s.unsqueeze(0);
            right = root_s.unsqueeze(1) * vh.slice(0, 0, k);
            residual_target = w - at::matmul(left, right);
        }
        l.B.zero_();
        l.A.zero_();
        l.B.slice(1, 0, left.size(1)).copy_(left / root);
        l.A.slice(0, 0, right.size(0)).copy_(right / root);
        l.layer->weight.copy_(qw);
        row.loftq_error = (w - quantize(l.layer->weight) - adapters.delta(l)).norm().item<double>() / norm;
        report.layers.push_back(row);
    }
    adapters.round_to_storage();
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace ql
