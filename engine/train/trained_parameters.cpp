// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/trained_parameters.h"

#include "engine/core/errors.h"
#include "engine/models/model.h"
#include "engine/quant/recipe.h"

namespace ql {

std::vector<std::pair<std::string, at::Tensor>> select_trained_parameters(const Model& model,
                                                                           const std::vector<std::string>& patterns,
                                                                           const std::string& source) {
    if (patterns.empty()) throw UserError("train: --train-only names no parameter");
    const std::vector<std::pair<std::string, at::Tensor>> all = model.named_parameters();
    std::vector<bool> used(patterns.size(), false);
    std::vector<std::pair<std::string, at::Tensor>> chosen;
    for (const auto& [name, tensor] : all) {
        const size_t dot = name.rfind('.');
        const std::string module = dot == std::string::npos ? name : name.substr(0, dot);
        bool take = false;
        for (size_t i = 0; i < patterns.size(); ++i)
            if (glob_match(patterns[i], name) || glob_match(patterns[i], module)) {
                used[i] = true;
                take = true;
            }
        if (take) chosen.emplace_back(name, tensor);
    }
    for (size_t i = 0; i < patterns.size(); ++i)
        if (!used[i])
            throw UserError("train: --train-only pattern '" + patterns[i] + "' matches no parameter of " + source +
                            " (names look like '" + (all.empty() ? std::string("?") : all[all.size() / 2].first) +
                            "'; a pattern matches a parameter's name or its module's, with * and ?)");
    return chosen;
}

}  // namespace ql
