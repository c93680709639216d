// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/export_manifest.h"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/io/sha256.h"
#include "engine/io/strict_json.h"

namespace ql {

using nlohmann::json;

std::string export_manifest_json(const ExportManifest& m) {
    json layers = json::object();
    for (const auto& [name, l] : m.layers) {
        json e = {{"format", l.format}, {"weight_sha256", l.weight_sha256}};
        if (l.nvfp4_global_scale) e["nvfp4_global_scale"] = *l.nvfp4_global_scale;
        layers[name] = e;
    }
    json j = {{"producer", {{"name", "quantlab"}, {"version", m.producer_version}}},
              {"layout", m.layout},
              {"layers", layers},
              {"fused_scale_groups", m.fused_scale_groups}};
    if (!m.kv_cache_format.empty()) j["kv_cache"] = {{"format", m.kv_cache_format}};
    return j.dump(2) + "\n";
}

ExportManifest parse_export_manifest(const std::string& text, const std::string& where) {
    json j;
    try {
        j = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError(where + ": not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw UserError(where + ": expected a JSON object");
    ExportManifest m;
    if (!j.contains("layout") || !j["layout"].is_string()) throw UserError(where + ": layout: expected a string");
    m.layout = j["layout"].get<std::string>();
    if (j.contains("producer") && j["producer"].is_object() && j["producer"].contains("version") && j["producer"]["version"].is_string())
        m.producer_version = j["producer"]["version"].get<std::string>();
    if (!j.contains("layers") || !j["layers"].is_object()) throw UserError(where + ": layers: expected an object");
    for (auto it = j["layers"].begin(); it != j["layers"].end(); ++it) {
        const std::string f = where + ": layers." + it.key();
        const json& e = *it;
        if (!e.is_object() || !e.contains("format") || !e["format"].is_string()) throw UserError(f + ".format: expected a string");
        if (!e.contains("weight_sha256") || !e["weight_sha256"].is_string() || e["weight_sha256"].get<std::string>().size() != 64)
            throw UserError(f + ".weight_sha256: expected 64 hex digits");
        ManifestLayer l{e["format"].get<std::string>(), e["weight_sha256"].get<std::string>(), std::nullopt};
        if (e.contains("nvfp4_global_scale")) {
            if (!e["nvfp4_global_scale"].is_number()) throw UserError(f + ".nvfp4_global_scale: expected a number");
            l.nvfp4_global_scale = e["nvfp4_global_scale"].get<float>();
        }
        m.layers[it.key()] = l;
    }
    if (j.contains("fused_scale_groups")) {
        const json& g = j["fused_scale_groups"];
        if (!g.is_array()) throw UserError(where + ": fused_scale_groups: expected a list of lists of names");
        for (const json& group : g) {
            std::vector<std::string> names;
            if (!group.is_array()) throw UserError(where + ": fused_scale_groups: expected a list of lists of names");
            for (const json& n : group) {
                if (!n.is_string()) throw UserError(where + ": fused_scale_groups: expected names");
                names.push_back(n.get<std::string>());
            }
            m.fused_scale_groups.push_back(names);
        }
    }
    if (j.contains("kv_cache") && j["kv_cache"].is_object() && j["kv_cache"].contains("format") && j["kv_cache"]["format"].is_string())
        m.kv_cache_format = j["kv_cache"]["format"].get<std::string>();
    return m;
}

std::string weight_digest(const float* values, int64_t n) {
    Sha256 h;
    std::vector<uint32_t> chunk;
    constexpr int64_t kChunk = 1 << 16;
    chunk.resize(static_cast<size_t>(kChunk));
    for (int64_t off = 0; off < n; off += kChunk) {
        const int64_t m = std::min(kChunk, n - off);
        for (int64_t i = 0; i < m; ++i) {
            const float v = values[off + i];
            uint32_t bits;
            std::memcpy(&bits, &v, 4);
            if (std::isnan(v)) bits = 0x7FC00000u;
            else if (v == 0.0f) bits = 0;
            chunk[static_cast<size_t>(i)] = bits;  // little-endian hosts only (x86-64, aarch64)
        }
        h.update(chunk.data(), static_cast<size_t>(m) * 4);
    }
    return h.hex();
}

}  // namespace ql
