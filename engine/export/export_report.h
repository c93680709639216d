// SPDX-License-Identifier: GPL-3.0-or-later
// The export report ("report", shared/design/EXPORT.md section 4): a folder holding
//   report.html  one self-contained page (no external assets; plots as PNG data: URIs, drawn by
//                report_plots.h): the model, the recipe, a metrics table, one curve per metric
//                series, the per-layer error table with a bar chart of output SQNR, and the
//                environment + reproducibility manifest (seed, SHA-256 of the model's files and
//                of the calibration data where it is a file, QuantLab and LibTorch versions,
//                threads)
//   metrics.csv  series,step,value for every series point
//   recipe.json  the recipe as applied
// With evaluation runs (ReportInputs::evaluations), the page has an "Evaluation" section: success
// per category with intervals, schema validity, tool-call accuracy, flips against the baseline,
// the logit metrics, the serving cost and the checklist (engine/evaluation/evaluation_tables.h).
// Curves come from a project run's series when given; otherwise from the checkpoint's own
// ptq_report.json (per-layer output SQNR by layer index) and train_report.json (the evaluation
// before and after training).
#pragma once

#include <string>
#include <vector>

#include "engine/core/export_series.h"
#include "engine/export/hf_modelopt_export.h"

namespace ql {

struct ReportInputs {
    std::string model_name;  // as the user named it
    std::string folder;      // the checkpoint folder
    const QuantizedModel* quantized = nullptr;
    std::vector<ExportSeries> series;
    std::string project;
    int64_t run_id = 0;
    std::string run_config_json;
    // Evaluation runs of the checkpoint (engine/evaluation/evaluation_run.h JSON texts, the
    // baseline first; projects/evalsuite_records.h evaluations_of_model): the report's
    // "Evaluation" section. Empty: none.
    std::vector<std::string> evaluations;
};

FolderExportResult export_report(const ReportInputs& in, const std::string& out, bool force, JobSink& sink,
                                 const CancellationToken& cancel);

// The page itself (tests).
std::string report_html(const ReportInputs& in, const std::vector<ExportSeries>& series);
// Series from the checkpoint's ptq_report.json / train_report.json.
std::vector<ExportSeries> series_from_checkpoint_reports(const std::string& folder);

}  // namespace ql
