// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/kv_cache_settings.h"

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"

namespace ql {

std::string KvCacheSettings::describe() const {
    if (!enabled) return "off";
    std::string s = format;
    if (format == "nvfp4")
        s += granularity == "head" ? " (global amax per head)" : " (global amax per tensor)";
    else if (granularity == "head")
        s += " per head";
    else if (granularity == "group")
        s += " group " + (group_size > 0 ? std::to_string(group_size) : std::string("head_dim"));
    else
        s += " per tensor";
    if (use_constant_amax) s += ", constant amax 448";
    if (rotate) s += ", Q/K rotated";
    return s;
}

double KvCacheSettings::bits_per_element(int64_t head_dim) const {
    if (!enabled) return 16.0;
    const FormatInfo& f = format_info(format);
    if (f.family == "nvfp4") return 4.0 + 8.0 / 16.0;
    if (f.family == "int" && granularity == "group") {
        const int64_t g = group_size > 0 ? group_size : head_dim;
        return f.element_bits + 16.0 / static_cast<double>(g);
    }
    return f.element_bits;
}

std::vector<std::string> kv_cache_preset_names() {
    return {"fp8", "fp8_cast", "fp8_head", "nvfp4", "nvfp4_cast", "nvfp4_rotate", "int8", "int8_head", "int4", "none"};
}

KvCacheSettings kv_cache_preset(const std::string& name) {
    KvCacheSettings s;
    s.enabled = true;
    if (name == "fp8" || name == "fp8_e4m3") {
        s.format = "fp8_e4m3";
    } else if (name == "fp8_cast") {
        s.format = "fp8_e4m3";
        s.use_constant_amax = true;
    } else if (name == "fp8_head") {
        s.format = "fp8_e4m3";
        s.granularity = "head";
    } else if (name == "nvfp4") {
        s.format = "nvfp4";
    } else if (name == "nvfp4_cast") {
        s.format = "nvfp4";
        s.use_constant_amax = true;
    } else if (name == "nvfp4_rotate") {
        s.format = "nvfp4";
        s.rotate = true;
    } else if (name == "int8") {
        s.format = "int8";
    } else if (name == "int8_head") {
        s.format = "int8";
        s.granularity = "head";
    } else if (name == "int4") {
        s.format = "int4";
        s.granularity = "group";
    } else if (name == "none") {
        return KvCacheSettings{};
    } else {
        std::string list;
        for (const std::string& n : kv_cache_preset_names()) list += (list.empty() ? "" : ", ") + n;
        throw UserError("--kv-cache: unknown KV-cache format '" + name + "' (expected one of: " + list + ")");
    }
    return s;
}

}  // namespace ql
