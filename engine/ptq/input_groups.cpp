// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/input_groups.h"
#include "engine/core/string_suffix.h"

#include <map>
#include <set>

namespace ql {
namespace {

// (norm, members) relative to a block prefix, per architecture.
struct GroupRule {
    std::string norm;
    std::vector<std::string> members;
};

std::vector<GroupRule> rules_for(const std::string& arch) {
    if (arch == "llama" || arch == "qwen2")
        return {{"input_layernorm", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
                {"post_attention_layernorm", {"mlp.gate_proj", "mlp.up_proj"}}};
    if (arch == "gpt2") return {{"ln_1", {"attn.c_attn"}}, {"ln_2", {"mlp.c_fc"}}};
    if (arch == "bert") return {{"", {"attention.self.query", "attention.self.key", "attention.self.value"}}};
    return {};
}

}  // namespace

std::vector<InputGroup> input_groups(const Model& model, const std::vector<std::string>& layers) {
    const std::vector<GroupRule> rules = rules_for(model.config().architecture);
    const std::set<std::string> wanted(layers.begin(), layers.end());
    std::set<std::string> existing;
    for (const QuantizableLayer* l : model.quantizable_layers()) existing.insert(l->name);
    std::set<std::string> params;
    for (const auto& [name, t] : model.named_parameters()) params.insert(name);
    std::map<std::string, size_t> group_of;  // layer -> index in groups
    std::vector<InputGroup> groups;
    for (const std::string& layer : layers) {
        if (group_of.count(layer)) continue;
        bool placed = false;
        for (const GroupRule& rule : rules) {
            for (const std::string& member : rule.members) {
                if (!ends_with(layer, "." + member) && layer != member) continue;
                const std::string prefix = layer.substr(0, layer.size() - member.size());
                InputGroup g;
                // Folding changes the input of every reader of the norm, so the group holds all of
                // them, also layers the caller did not ask for (their weights absorb s exactly).
                for (const std::string& m : rule.members)
                    if (existing.count(prefix + m) && (wanted.count(prefix + m) || !rule.norm.empty()))
                        g.layers.push_back(prefix + m);
                // Only fold into a norm whose weight exists (and so is not shared elsewhere).
                if (!rule.norm.empty() && params.count(prefix + rule.norm + ".weight")) g.norm = prefix + rule.norm;
                for (const std::string& m : g.layers) group_of[m] = groups.size();
                groups.push_back(std::move(g));
                placed = true;
                break;
            }
            if (placed) break;
        }
        if (!placed) {
            group_of[layer] = groups.size();
            groups.push_back(InputGroup{"", {layer}});
        }
    }
    return groups;
}

}  // namespace ql
