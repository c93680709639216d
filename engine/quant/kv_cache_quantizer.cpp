// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/kv_cache_quantizer.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/quant/straight_through.h"
#include "kernels/hadamard.h"

namespace ql {
namespace {

constexpr float kE4m3Max = 448.0f;  // OCP FP8 E4M3 largest finite value (Model Optimizer's constant amax)

}  // namespace

KvCacheQuantizer::KvCacheQuantizer(AttentionSite& site, const KvCacheSettings& settings, bool rotate_qk)
    : site_(site), settings_(settings) {
    if (rotate_qk || (settings.enabled && settings.rotate))
        rotation_ = HadamardRotation{kernels::default_hadamard_block(site.head_dim), at::Tensor()};
    if (settings_.enabled) {
        QuantOptions o;
        o.format = settings_.format;
        if (settings_.granularity == "group") {
            o.granularity = "group";
            o.group_size = settings_.group_size > 0 ? settings_.group_size : site.head_dim;
            // Weights accept a short last group (Model Optimizer pads it); a KV cache's groups
            // tile each head exactly, as the cache layouts and bits_per_element assume.
            if (site.head_dim % o.group_size != 0)
                throw UserError(site.name + " KV cache: group size " + std::to_string(o.group_size) +
                                " does not divide head_dim " + std::to_string(site.head_dim));
        } else if (format_info(settings_.format).family != "nvfp4") {
            o.granularity = "tensor";
        }
        try {
            spec_ = resolve_spec(o, {1, site.head_dim});
        } catch (const UserError& e) {
            throw UserError(site.name + " KV cache: " + e.what());
        }
        if (settings_.use_constant_amax) key_amax_ = value_amax_ = {kE4m3Max};
    }
    site_.hook = [this](at::Tensor& q, at::Tensor& k, at::Tensor& v) { forward(q, k, v); };
}

KvCacheQuantizer::~KvCacheQuantizer() { site_.hook = nullptr; }

bool KvCacheQuantizer::needs_amax() const {
    return configured() && !settings_.use_constant_amax && settings_.granularity != "group";
}

int64_t KvCacheQuantizer::amax_count() const {
    if (!configured() || settings_.granularity == "group") return 0;
    return settings_.granularity == "head" ? site_.num_kv_heads : 1;
}

void KvCacheQuantizer::set_amax(std::vector<float> key, std::vector<float> value) {
    const size_t n = static_cast<size_t>(amax_count());
    for (const auto* a : {&key, &value}) {
        if (a->size() != n)
            throw UserError(name() + " KV cache: expected " + std::to_string(n) + " amax value(s), got " + std::to_string(a->size()));
        for (float x : *a)
            if (!std::isfinite(x) || x < 0) throw UserError(name() + " KV cache: amax must be finite and non-negative, got " + std::to_string(x));
    }
    key_amax_ = std::move(key);
    value_amax_ = std::move(value);
}

std::vector<float> KvCacheQuantizer::kv_scale(const std::vector<float>& amax) const {
    if (!configured() || amax.empty()) return {};
    const FormatInfo& f = *spec_.info;
    const float divisor = f.family == "int" ? static_cast<float>((1 << (f.element_bits - 1)) - 1) : kE4m3Max;
    std::vector<float> s;
    for (float a : amax) s.push_back(a / divisor);
    return s;
}

at::Tensor KvCacheQuantizer::quantize(const at::Tensor& x, const std::vector<float>& amax, const char* which) const {
    if (!configured()) return x;
    const bool train = at::GradMode::is_enabled() && x.requires_grad();
    auto fq = [&](const at::Tensor& t, const QuantSpec& spec) { return train ? fake_quantize_ste(t, spec) : fake_quantize(t, spec); };
    const int64_t count = amax_count();
    if (count == 0) return fq(x, spec_);  // dynamic groups along head_dim
    if (static_cast<int64_t>(amax.size()) != count)
        throw UserError(name() + " KV cache: the " + which + " quantizer has no calibrated amax (run calibration first)");
    QuantSpec spec = spec_;
    if (count == 1) {
        spec.fixed_amax = amax[0];
        return fq(x, spec);
    }
    if (x.dim() < 2 || x.size(1) != count)
        throw UserError(name() + " KV cache: expected " + std::to_string(count) + " heads in dimension 1");
    std::vector<at::Tensor> heads;
    heads.reserve(static_cast<size_t>(count));
    for (int64_t h = 0; h < count; ++h) {
        spec.fixed_amax = amax[static_cast<size_t>(h)];
        heads.push_back(fq(x.select(1, h), spec));
    }
    return at::stack(heads, 1);
}

void KvCacheQuantizer::forward(at::Tensor& q, at::Tensor& k, at::Tensor& v) const {
    if (rotation_.active()) {
        // (q H)(k H)^T = q k^T: scores unchanged, the cached keys rotated.
        q = hadamard_transform(q, rotation_);
        k = hadamard_transform(k, rotation_);
    }
    if (observer_) observer_(k, v);
    if (!enabled_) return;
    k = quantize_key(k);
    v = quantize_value(v);
}

}  // namespace ql
