// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab_export.json, written by the hf-modelopt and compressed-tensors exports beside the
// checkpoint (consumers ignore it; re-exports do not copy quantlab_* files): what QuantLab
// evaluated, so that the Export Doctor (export_doctor.h) can check a folder on its own that the
// packed weights decode to exactly those weights.
//   {"producer": {"name": "quantlab", "version": ...}, "layout": "compressed-tensors" | "hf-modelopt",
//    "layers": {"<module>": {"format": "<layout's format name>", "weight_sha256": "<64 hex>",
//                            "nvfp4_global_scale": g (compressed-tensors NVFP4 only)}},
//    "fused_scale_groups": [["...q_proj", "...k_proj", "...v_proj"], ...],
//    "kv_cache": {"format": "fp8_e4m3"} (when KV-cache scales were exported)}
// weight_sha256 digests the quantized weight as the quantized forward uses it: float32 [out, in],
// row-major, little-endian, with -0.0 written as +0.0 and every NaN as 0x7FC00000 (the decoders
// cannot tell those apart and the forward does not either).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ql {

constexpr const char* kExportManifestFile = "quantlab_export.json";

struct ManifestLayer {
    std::string format;
    std::string weight_sha256;
    std::optional<float> nvfp4_global_scale;
};

struct ExportManifest {
    std::string layout;
    std::string producer_version;
    std::map<std::string, ManifestLayer> layers;
    std::vector<std::vector<std::string>> fused_scale_groups;
    std::string kv_cache_format;  // "" = none
};

std::string export_manifest_json(const ExportManifest& m);
// UserError naming `where` and the field.
ExportManifest parse_export_manifest(const std::string& text, const std::string& where);

// The digest described above of n floats.
std::string weight_digest(const float* values, int64_t n);

}  // namespace ql
