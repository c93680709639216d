// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/fused_layers.h"

#include <map>

#include "engine/models/model.h"

namespace ql {
namespace {

const std::vector<std::vector<std::string>>& fused_sets() {
    static const std::vector<std::vector<std::string>> sets = {
        {"q_proj", "k_proj", "v_proj"}, {"gate_proj", "up_proj"}, {"query", "key", "value"},
        {"w1", "w3"},                   {"q_a_proj", "kv_a_proj_with_mqa"},
    };
    return sets;
}

}  // namespace

std::vector<std::vector<std::string>> fused_layer_groups(const std::vector<std::string>& names) {
    // parent -> (set index -> members found, by position in the set)
    std::map<std::pair<std::string, size_t>, std::vector<std::string>> found;
    std::vector<std::pair<std::string, size_t>> order;
    for (const std::string& n : names) {
        const size_t dot = n.rfind('.');
        const std::string parent = dot == std::string::npos ? "" : n.substr(0, dot);
        const std::string leaf = dot == std::string::npos ? n : n.substr(dot + 1);
        for (size_t s = 0; s < fused_sets().size(); ++s) {
            const auto& set = fused_sets()[s];
            for (size_t i = 0; i < set.size(); ++i) {
                if (set[i] != leaf) continue;
                auto key = std::make_pair(parent, s);
                auto& members = found[key];
                if (members.empty()) {
                    members.assign(set.size(), "");
                    order.push_back(key);
                }
                members[i] = n;
            }
        }
    }
    std::vector<std::vector<std::string>> groups;
    for (const auto& key : order) {
        std::vector<std::string> g;
        for (const std::string& m : found[key])
            if (!m.empty()) g.push_back(m);
        if (g.size() >= 2) groups.push_back(std::move(g));
    }
    return groups;
}

std::vector<std::vector<std::string>> fused_layer_groups(const Model& model) {
    std::vector<std::string> names;
    for (const LinearLayer* l : model.linear_layers()) names.push_back(l->name);
    return fused_layer_groups(names);
}

}  // namespace ql
