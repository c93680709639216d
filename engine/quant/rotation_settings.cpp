// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/rotation_settings.h"

#include "engine/core/errors.h"

namespace ql {

std::string RotationSettings::describe() const {
    if (!enabled()) return "off";
    std::string s = method;
    std::string parts;
    auto part = [&](const std::optional<bool>& on, const char* name) {
        if (!on || *on) parts += std::string(parts.empty() ? "" : " ") + name;
    };
    if (method == "hadamard") {
        part(residual, "R1");
        part(attention_head, "R2");
        part(down_proj, "R4");
    }
    if (qk) parts += std::string(parts.empty() ? "" : " ") + "R3";
    if (!parts.empty()) s += " (" + parts + ")";
    if (method == "rht") s += block_size > 0 ? " block " + std::to_string(block_size) : " block default";
    return s;
}

RotationSettings rotation_preset(const std::string& name) {
    RotationSettings s;
    if (name == "hadamard" || name == "rht") {
        s.method = name;
        return s;
    }
    if (name == "none") return s;
    throw UserError("--rotate: unknown rotation '" + name + "' (expected hadamard, rht or none)");
}

}  // namespace ql
