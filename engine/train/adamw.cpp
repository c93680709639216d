// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/adamw.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <stdexcept>

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
