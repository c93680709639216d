// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/lora_settings.h"

#include <cmath>
#include <fnmatch.h>

#include "engine/core/errors.h"
#include "engine/models/model.h"

namespace ql {

void LoraSettings::validate() const {
    if (rank < 1 || rank > 4096) throw UserError("lora: --rank must be in 1..4096, got " + std::to_string(rank));
    if (!std::isfinite(alpha) || !(alpha > 0)) throw UserError("lora: --alpha must be a positive number");
    if (!(dropout >= 0) || !(dropout < 1)) throw UserError("lora: --dropout must be in [0, 1)");
    if (init != "default" && init != "loftq") throw UserError("lora: --init is default or loftq, got '" + init + "'");
    if (loftq_iterations < 1 || loftq_iterations > 100) throw UserError("lora: --loftq-iters must be in 1..100");
    if (dtype != "fp32" && dtype != "bf16") throw UserError("lora: --adapter-dtype is fp32 or bf16, got '" + dtype + "'");
    if (targets.empty()) throw UserError("lora: --targets names no layer");
}

std::vector<std::string> parse_lora_targets(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(start, end - start);
        const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
        if (a != std::string::npos) out.push_back(item.substr(a, b - a + 1));
        start = end + 1;
    }
    return out;
}

namespace {

bool lora_pattern_matches(const std::string& pattern, const std::string& module) {
    if (pattern.find_first_of("*?[") != std::string::npos) return fnmatch(pattern.c_str(), module.c_str(), 0) == 0;
    if (module == pattern) return true;
    return module.size() > pattern.size() && module.compare(module.size() - pattern.size(), pattern.size(), pattern) == 0 &&
           module[module.size() - pattern.size() - 1] == '.';
}

}  // namespace

bool lora_target_matches(const std::vector<std::string>& targets, const std::string& module, bool is_head) {
    for (const std::string& t : targets) {
        if (t == "all-linear") {
            if (!is_head) return true;
            continue;
        }
        if (lora_pattern_matches(t, module)) return true;
    }
    return false;
}

std::vector<std::string> resolve_lora_targets(const Model& model, const LoraSettings& settings) {
    settings.validate();
    const std::vector<LinearLayer*> linears = model.linear_layers();
    // The output head: the last Linear of a decoder (lm_head), as PEFT's "all-linear" leaves out
    // the output embedding.
    const auto is_head = [&](const LinearLayer* l) {
        return l->name == "lm_head" || (model.generates_text() && !linears.empty() && l == linears.back());
    };
    for (const std::string& t : settings.targets) {
        if (t == "all-linear") continue;
        bool any = false;
        for (const LinearLayer* l : linears) any = any || lora_target_matches({t}, l->name, is_head(l));
        if (!any) throw UserError("lora: the target '" + t + "' matches no Linear layer of the model (e.g. " +
                                  (linears.empty() ? std::string("none") : linears.front()->name) + ")");
    }
    std::vector<std::string> out;
    for (const LinearLayer* l : linears)
        if (lora_target_matches(settings.targets, l->name, is_head(l))) out.push_back(l->name);
    if (out.empty()) throw UserError("lora: --targets selects no Linear layer of the model");
    return out;
}

}  // namespace ql
