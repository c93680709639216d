// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/export_validator.h"

#include <cmath>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/core/nd_array.h"

namespace ql {
namespace {

using D = SafetensorsDtype;

std::string scale_problem(const ExportTensor& t) {
    const size_t n = t.bytes.size();
    if (t.dtype == D::F32) {
        for (size_t i = 0; i + 4 <= n; i += 4) {
            float v;
            std::memcpy(&v, t.bytes.data() + i, 4);
            if (!std::isfinite(v)) return "value " + std::to_string(i / 4) + " is " + (std::isnan(v) ? "NaN" : "Inf");
            if (v < 0) return "value " + std::to_string(i / 4) + " is negative";
        }
    } else if (t.dtype == D::F8_E4M3) {
        for (size_t i = 0; i < n; ++i)
            if ((t.bytes[i] & 0x7F) == 0x7F) return "value " + std::to_string(i) + " is the E4M3 NaN code";
            else if (t.bytes[i] & 0x80) return "value " + std::to_string(i) + " is negative";
    }
    return "";
}

}  // namespace

std::vector<std::string> find_hf_export_problems(const std::vector<HfExportLayer>& layers,
                                                 const std::map<std::string, const ExportTensor*>& tensors) {
    std::vector<std::string> problems;
    for (const HfExportLayer& l : layers) {
        for (const ExpectedTensor& e : hf_expected_tensors(l.layer, l.format, l.out, l.in)) {
            const auto it = tensors.find(e.name);
            if (it == tensors.end()) {
                problems.push_back(e.name + ": missing (" + l.format.quant_algo + " layers need it)");
                continue;
            }
            const ExportTensor& t = *it->second;
            if (t.dtype != e.dtype) {
                std::string why = e.name + ": dtype " + safetensors_dtype_name(t.dtype) + ", expected " + safetensors_dtype_name(e.dtype);
                if (e.name == l.layer + ".weight" && e.dtype == D::U8 && l.format.quant_algo.find("FP4") != std::string::npos)
                    why += " (FP4 weights are packed, two E2M1 codes per byte)";
                problems.push_back(why);
                continue;
            }
            if (t.shape != e.shape) {
                problems.push_back(e.name + ": shape " + shape_string(t.shape) + ", expected " + shape_string(e.shape));
                continue;
            }
            const bool scale = e.name.size() > 6 && (e.name.find("_scale") != std::string::npos);
            if (scale) {
                if (l.format.quant_algo == "MXFP4" && e.name == l.layer + ".weight_scale") {
                    for (size_t i = 0; i < t.bytes.size(); ++i)
                        if (t.bytes[i] == 0xFF) {
                            problems.push_back(e.name + ": value " + std::to_string(i) + " is the E8M0 NaN code");
                            break;
                        }
                } else if (const std::string p = scale_problem(t); !p.empty()) {
                    problems.push_back(e.name + ": " + p);
                }
            }
        }
    }
    return problems;
}

void validate_hf_export(const std::vector<HfExportLayer>& layers, const std::map<std::string, const ExportTensor*>& tensors,
                        const std::string& where) {
    const std::vector<std::string> p = find_hf_export_problems(layers, tensors);
    if (p.empty()) return;
    std::string msg = where + ": " + std::to_string(p.size()) + (p.size() == 1 ? " problem" : " problems") + ":";
    for (size_t i = 0; i < p.size() && i < 8; ++i) msg += "\n  " + p[i];
    if (p.size() > 8) msg += "\n  ...";
    throw UserError(msg);
}

}  // namespace ql
