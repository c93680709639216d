// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/lora_adapters.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <map>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/models/linear_output_adapter.h"

namespace ql {
namespace {

at::Generator lora_generator(uint64_t seed, uint64_t a, uint64_t b) {
    return at::make_generator<at::CPUGeneratorImpl>(mix64(seed ^ mix64(a * 0x9E3779B97F4A7C15ULL + mix64(b + 1))));
}

}  // namespace

std::string peft_tensor_name(const std::string& module, const char* which) {
    return "base_model.model." + module + ".lora_" + which + ".weight";
}

LoraAdapters::LoraAdapters(Model& model, LoraSettings settings) : model_(model), settings_(std::move(settings)) {
    const std::vector<std::string> modules = resolve_lora_targets(model, settings_);
    c10::NoGradGuard no_grad;
    for (size_t i = 0; i < modules.size(); ++i) {
        auto* layer = dynamic_cast<LinearLayer*>(model.find_layer(modules[i]));
        if (!layer) throw std::logic_error("lora: " + modules[i] + " is not a Linear layer");
        if (has_linear_output_adapter(*layer)) throw UserError("lora: " + modules[i] + " already has an adapter");
        const int64_t out = layer->weight.size(0), in = layer->weight.size(1), r = settings_.rank;
        const auto options = at::TensorOptions().dtype(at::kFloat);
        // nn.init.kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in)
        // = 1 / sqrt(fan_in) (torch/nn/init.py), fan_in = in for A [r, in].
        const double bound = 1.0 / std::sqrt(static_cast<double>(in));
        at::Generator g = lora_generator(settings_.seed, 0, i);
        LoraLayer l;
        l.layer = layer;
        l.module = modules[i];
        l.A = at::empty({r, in}, options).uniform_(-bound, bound, g).to(layer->weight.device());
        l.B = at::zeros({out, r}, options.device(layer->weight.device()));
        layers_.push_back(std::move(l));
    }
    round_to_storage();
    for (size_t i = 0; i < layers_.size(); ++i)
        set_linear_output_adapter(*layers_[i].layer,
                                  [this, i](const at::Tensor& x, const at::Tensor& y) { return forward(i, x, y); });
}

LoraAdapters::~LoraAdapters() {
    for (LoraLayer& l : layers_) set_linear_output_adapter(*l.layer, nullptr);
}

const LoraLayer* LoraAdapters::find(const std::string& module) const {
    for (const LoraLayer& l : layers_)
        if (l.module == module) return &l;
    return nullptr;
}

at::Tensor LoraAdapters::forward(size_t index, const at::Tensor& x, const at::Tensor& y) const {
    if (!enabled_) return y;
    const LoraLayer& l = layers_[index];
    at::Tensor h = x;
    const double p = settings_.dropout;
    if (training_ && p > 0) {
        // nn.Dropout: zero with probability p, scale the kept values by 1 / (1 - p). The mask is
        // drawn on the CPU from (seed, micro-batch, layer), then moved to x's device.
        at::Generator g = lora_generator(settings_.seed, static_cast<uint64_t>(micro_batch_) + 1, index);
        const at::Tensor keep = at::empty(x.sizes(), at::TensorOptions().dtype(at::kFloat)).bernoulli_(1.0 - p, g);
        h = x * (keep * (1.0 / (1.0 - p))).to(x.device(), x.scalar_type());
    }
    const at::Tensor a = l.A.scalar_type() == h.scalar_type() ? l.A : l.A.to(h.scalar_type());
    const at::Tensor b = l.B.scalar_type() == h.scalar_type() ? l.B : l.B.to(h.scalar_type());
    return y + at::linear(at::linear(h, a), b) * scaling();
}

std::vector<std::pair<std::string, at::Tensor>> LoraAdapters::named_parameters() const {
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const LoraLayer& l : layers_) {
        out.emplace_back(peft_tensor_name(l.module, "A"), l.A);
        out.emplace_back(peft_tensor_name(l.module, "B"), l.B);
    }
    return out;
}

int64_t LoraAdapters::parameter_count() const {
    int64_t n = 0;
    for (const LoraLayer& l : layers_) n += l.A.numel() + l.B.numel();
    return n;
}

void LoraAdapters::round_to_storage() {
    if (settings_.dtype != "bf16") return;
    c10::NoGradGuard no_grad;
    for (LoraLayer& l : layers_) {
        l.A.copy_(l.A.to(at::kBFloat16).to(at::kFloat));
        l.B.copy_(l.B.to(at::kBFloat16).to(at::kFloat));
    }
}

at::Tensor LoraAdapters::delta(const LoraLayer& l) const {
    c10::NoGradGuard no_grad;
    return at::matmul(l.B.detach(), l.A.detach()) * scaling();
}

void LoraAdapters::load(const std::vector<std::pair<std::string, at::Tensor>>& tensors, const std::string& source) {
    std::map<std::string, at::Tensor> by_name(tensors.begin(), tensors.end());
    c10::NoGradGuard no_grad;
    for (const auto& [name, mine] : named_parameters()) {
        const auto it = by_name.find(name);
        if (it == by_name.end()) throw UserError(source + ": the adapter has no tensor " + name);
        if (it->second.sizes() != mine.sizes())
            throw UserError(source + ": " + name + " has shape " + c10::str(it->second.sizes()) + ", the model needs " +
                            c10::str(mine.sizes()));
        const at::Tensor v = it->second.to(at::kFloat);
        if (!at::isfinite(v).all().item<bool>()) throw UserError(source + ": " + name + " holds NaN or Inf");
        mine.copy_(v);
        by_name.erase(it);
    }
    if (!by_name.empty()) throw UserError(source + ": tensor " + by_name.begin()->first + " matches no adapter of the model");
}

}  // namespace ql
