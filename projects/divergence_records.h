// SPDX-License-Identifier: GPL-3.0-or-later
// A divergence report (engine/api/divergence_json.h, docs/DIAGNOSIS.md) as a project record: one
// layer-statistics row of kind "divergence_report", layer "model", whose JSON column holds the
// whole report as `quantlab-cli divergence --json` prints it. quantlab-cli and the GUI store it
// this way, and the Layer Inspector's Depth and Tokens tabs read it back without recomputing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projects/layer_stats.h"

namespace ql::projects {

inline constexpr const char* kDivergenceReportKind = "divergence_report";

// `report_json`: the report's JSON text (validated when the record is written).
inline LayerStats divergence_record(const std::string& report_json) {
    LayerStats s;
    s.layer = "model";
    s.kind = kDivergenceReportKind;
    s.outliers_json = report_json;
    return s;
}

// The report's JSON text among a run's records (the last one when there are several).
inline std::optional<std::string> divergence_report_text(const std::vector<LayerStats>& records) {
    std::optional<std::string> text;
    for (const LayerStats& s : records)
        if (s.kind == kDivergenceReportKind) text = s.outliers_json;
    return text;
}

}  // namespace ql::projects
