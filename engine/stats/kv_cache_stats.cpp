// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/stats/kv_cache_stats.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/stats/format_fit.h"
#include "engine/core/not_a_number.h"

namespace ql {
namespace {


FormatFit fit_of(const at::Tensor& rows, const QuantSpec& spec, const std::string& settings, int bins) {
    std::vector<float> q;
    const at::Tensor c = rows.to(at::kCPU, at::kFloat).contiguous();
    FormatFit f;
    try {
        f = fit_weight(c.data_ptr<float>(), c.size(0), c.size(1), spec, bins, q);
    } catch (const UserError& e) {
        f = FormatFit{};
        f.format = spec.info ? spec.info->name : "?";
        f.error = e.what();
        f.clipped_fraction = f.weight_mse = f.weight_sqnr_db = kNaN;
        f.output_sqnr_db = f.wa_output_sqnr_db = f.input_clipped_fraction = kNaN;
        return f;
    }
    if (!settings.empty()) f.settings = settings;
    return f;
}

// The record of one cached tensor `rows` [n, head_dim]; amax: the quantizer's static amax for
// these rows (NaN: dynamic or not quantized).
LayerStatistics record(const std::string& name, const at::Tensor& rows, const KvCacheQuantizer& kv, float amax, int top_k,
                       int bins) {
    LayerStatistics ls;
    ls.layer = name;
    ls.kind = "kv_cache";
    ls.weight_shape = {rows.size(0), rows.size(1)};
    const at::Tensor c = rows.to(at::kCPU, at::kFloat).contiguous();
    ls.weight = tensor_statistics(c.data_ptr<float>(), c.size(0), c.size(1), top_k, bins, /*channels_in_columns=*/true);
    const int64_t first = std::min<int64_t>(c.size(1), 16);
    ls.first_block.assign(c.data_ptr<float>(), c.data_ptr<float>() + first);
    if (kv.configured()) {
        ls.chosen_format = kv.settings().format;
        QuantSpec spec = kv.spec();
        spec.fixed_amax = amax;
        ls.fits.push_back(fit_of(rows, spec, kv.settings().describe(), bins));
        if (!std::isnan(amax)) {
            ls.input_amax = amax;
            ls.input_clipped_fraction = c.abs().gt(amax).to(at::kDouble).mean().item<double>();
        }
    }
    for (const char* other : {"fp8_e4m3", "nvfp4"}) {
        if (kv.configured() && kv.settings().format == other) continue;
        QuantOptions o;
        o.format = other;
        if (std::string(other) == "fp8_e4m3") o.granularity = "tensor";
        ls.fits.push_back(fit_of(rows, resolve_spec(o, {1, rows.size(1)}), "", bins));
    }
    return ls;
}

bool wanted_name(const std::vector<std::string>& wanted, const std::string& name) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
}

}  // namespace

std::vector<LayerStatistics> kv_cache_statistics(const QuantizedModel& q, KvCacheObservers& observed, bool per_head,
                                                 const std::vector<std::string>& wanted, int top_k, int bins) {
    std::vector<LayerStatistics> out;
    for (const auto& kp : q.kv_caches()) {
        const KvCacheQuantizer& kv = *kp;
        if (!kv.configured() || !observed.has(kv.name())) continue;
        KvCacheStatistics& s = observed.at(kv.name());
        const int64_t heads = kv.site().num_kv_heads;
        for (const bool key : {true, false}) {
            const at::Tensor samples = key ? s.key_samples() : s.value_samples();  // [n, H, D]
            if (!samples.defined() || samples.numel() == 0) continue;
            const std::vector<float>& amax = key ? kv.key_amax() : kv.value_amax();
            const std::string base = kv.name() + (key ? ".k_cache" : ".v_cache");
            // Static scales (calibrated or constant) have an amax; dynamic groups have none.
            const float all_amax = amax.empty() ? std::nanf("") : *std::max_element(amax.begin(), amax.end());
            if (wanted_name(wanted, base))
                out.push_back(record(base, samples.reshape({-1, samples.size(2)}), kv, all_amax, top_k, bins));
            if (!per_head) continue;
            for (int64_t h = 0; h < heads; ++h) {
                const std::string name = base + ".head" + std::to_string(h);
                if (!wanted_name(wanted, name)) continue;
                float head_amax = all_amax;
                if (static_cast<int64_t>(amax.size()) == heads && heads > 1) head_amax = amax[static_cast<size_t>(h)];
                out.push_back(record(name, samples.select(1, h), kv, head_amax, top_k, bins));
            }
        }
    }
    return out;
}

}  // namespace ql
