// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/adamw.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>
#include <stdexcept>

#include "kernels/adamw_update.h"

namespace ql {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWOptions options, std::vector<bool> decay)
    : params_(std::move(params)), decay_(std::move(decay)), options_(options) {
    if (decay_.empty()) decay_.assign(params_.size(), true);
    if (decay_.size() != params_.size()) throw std::invalid_argument("AdamW: one decay flag per parameter");
    for (const auto& p : params_) {
        m_.push_back(at::zeros_like(p));
        v_.push_back(at::zeros_like(p));
    }
}

void AdamW::step(double lr) {
    c10::NoGradGuard no_grad;
    ++step_;
    const double bc1 = 1.0 - std::pow(options_.beta1, static_cast<double>(step_));
    const double bc2 = 1.0 - std::pow(options_.beta2, static_cast<double>(step_));
    const double step_size = lr / bc1;
    const double bc2_sqrt = std::sqrt(bc2);
    if (options_.fused && step_fused(lr, step_size, bc2_sqrt)) return;
    for (size_t i = 0; i < params_.size(); ++i) {
        at::Tensor& p = params_[i];
        const at::Tensor& g = p.grad();
        if (!g.defined()) continue;
        if (decay_[i] && options_.weight_decay != 0) p.mul_(1.0 - lr * options_.weight_decay);
        m_[i].mul_(options_.beta1).add_(g, 1.0 - options_.beta1);
        v_[i].mul_(options_.beta2).addcmul_(g, g, 1.0 - options_.beta2);
        const at::Tensor denom = v_[i].sqrt().div_(bc2_sqrt).add_(options_.eps);
        p.addcdiv_(m_[i], denom, -step_size);
    }
}

// The whole update as one kernel call, with the scalars rounded to float32 as ATen rounds the
// double arguments of mul_, add_, addcmul_, div_ and addcdiv_ on float tensors. A tensor that is
// not a contiguous float32 one (a transposed parameter, moments created like it) goes through a
// contiguous float32 copy written back after the kernel, so that every CPU step takes this path
// whatever the layouts: a run that took the ATen path for some tensors only on some steps (a
// parameter reloaded with other strides on resume) would not reproduce itself. False (nothing
// done) for tensors off the CPU and for parameters sharing memory.
bool AdamW::step_fused(double lr, double step_size, double bc2_sqrt) {
    struct Staged {
        at::Tensor* target;  // written back from `work` when they differ
        at::Tensor work;
    };
    std::vector<kernels::AdamWSegment> segments;
    std::vector<Staged> staged;
    std::vector<at::Tensor> inputs;  // contiguous float32 gradients kept alive
    segments.reserve(params_.size());
    std::vector<at::Tensor*> written;  // updated in place through their data: versions to bump
    auto writable = [&](at::Tensor& t) -> float* {
        if (t.scalar_type() == at::kFloat && t.is_contiguous()) {
            written.push_back(&t);
            return t.data_ptr<float>();
        }
        staged.push_back({&t, t.to(at::kFloat).contiguous()});
        return staged.back().work.data_ptr<float>();
    };
    for (size_t i = 0; i < params_.size(); ++i) {
        const at::Tensor& g = params_[i].grad();
        if (!g.defined()) continue;
        for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&params_[i], &g, &m_[i], &v_[i]})
            if (!t->device().is_cpu()) return false;
        if (g.numel() != params_[i].numel()) return false;
    }
    // Parameters that share memory (tied weights listed twice) are updated one after the other
    // by the ATen path; the kernel would update them at once from several threads.
    std::vector<std::pair<const void*, const void*>> spans;
    for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].grad().defined()) {
            const auto* b = static_cast<const char*>(params_[i].data_ptr());
            spans.emplace_back(b, b + params_[i].numel() * static_cast<int64_t>(params_[i].element_size()));
        }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first < spans[i - 1].second) return false;
    staged.reserve(3 * params_.size());  // `writable` hands out pointers into it
    inputs.reserve(params_.size());
    for (size_t i = 0; i < params_.size(); ++i) {
        at::Tensor& p = params_[i];
        const at::Tensor& g = p.grad();
        if (!g.defined()) continue;
        inputs.push_back(g.to(at::kFloat).contiguous());
        const bool decays = decay_[i] && options_.weight_decay != 0;
        segments.push_back({writable(p), inputs.back().data_ptr<float>(), writable(m_[i]), writable(v_[i]), p.numel(),
                            decays ? static_cast<float>(1.0 - lr * options_.weight_decay) : 1.0f});
    }
    const kernels::AdamWCoefficients c{static_cast<float>(options_.beta1), static_cast<float>(1.0 - options_.beta1),
                                       static_cast<float>(options_.beta2), static_cast<float>(1.0 - options_.beta2),
                                       static_cast<float>(-step_size),      static_cast<float>(bc2_sqrt),
                                       static_cast<float>(options_.eps)};
    kernels::adamw_update(segments.data(), static_cast<int64_t>(segments.size()), c);
    for (auto& s : staged) s.target->copy_(s.work);
    // What ATen's in-place ops do: the quantizers cache their fake-quantized weights by the
    // tensor's version (engine/quant/layer_quantizer.cpp), and a write through the data pointer
    // alone would leave them serving the weights of the step before.
    for (at::Tensor* t : written) t->unsafeGetTensorImpl()->bump_version();
    return true;
}

void AdamW::restore(const std::vector<at::Tensor>& first, const std::vector<at::Tensor>& second, int64_t steps) {
    if (first.size() != params_.size() || second.size() != params_.size() || steps < 0)
        throw std::invalid_argument("AdamW::restore: one first and second moment per parameter");
    for (size_t i = 0; i < params_.size(); ++i)
        if (first[i].sizes() != params_[i].sizes() || second[i].sizes() != params_[i].sizes())
            throw std::invalid_argument("AdamW::restore: moment shapes differ from the parameters'");
    c10::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
        m_[i].copy_(first[i]);
        v_[i].copy_(second[i]);
    }
    step_ = steps;
}

void AdamW::zero_grad() {
    for (auto& p : params_) {
        at::Tensor g = p.mutable_grad();
        if (g.defined()) g.zero_();
    }
}

double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
    c10::NoGradGuard no_grad;
    double sq = 0;
    for (const auto& p : params)
        if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
    const double norm = std::sqrt(sq);
    if (std::isfinite(norm) && norm > max_norm) {
        const double scale = max_norm / (norm + 1e-6);
        for (const auto& p : params)
            if (p.grad().defined()) p.grad().mul_(scale);
    }
    return norm;
}

}  // namespace ql
