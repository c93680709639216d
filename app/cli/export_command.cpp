// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli export MODEL --as hf-modelopt|compressed-tensors|gguf|fakequant|report --out PATH [--force]
//     [--project P.qlab [--run N]]: writes a quantized checkpoint for deployment tools, as a
// fake-quantized FP checkpoint, or as a report (docs/EXPORT.md, docs/CLI.md "export").
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/doctor_text.h"
#include "app/cli/recorded_run_info.h"
#include "projects/project_run_recorder.h"
#include "engine/core/errors.h"
#include "engine/api/doctor_api.h"
#include "engine/api/export_api.h"
#include "engine/api/ptq_api.h"

namespace ql::cli {
namespace {

std::string usage() {
    return "quantlab-cli export MODEL --as hf-modelopt|compressed-tensors|gguf|fakequant|report --out PATH [--force]\n"
           "    [--gguf-type T] [--project P.qlab [--run N]] [--json]\n\n"
           "MODEL: a quantized checkpoint folder written by 'quantlab-cli ptq' or 'train' (or 'demo').\n"
           "  hf-modelopt  NVIDIA Model Optimizer HF checkpoint (NVFP4, FP8, INT4 AWQ/GPTQ, MXFP4): vLLM, TensorRT-LLM\n"
           "  compressed-tensors  vLLM / llm-compressor checkpoint (INT4/INT8 W4A16/W8A16/W8A8, FP8, NVFP4, MXFP4)\n"
           "  gguf         llama.cpp GGUF file\n"
           "  fakequant    the model's HF layout with dequantized weights + quantlab_recipe.json\n"
           "  report       folder with report.html (self-contained), metrics.csv, recipe.json\n"
           "PATH must not exist unless --force. Writing is crash-safe: PATH appears only when complete.\n"
           "The Export Doctor checks every model export before it is renamed into place (see 'quantlab-cli doctor');\n"
           "an error finding aborts the export (exit 1), warnings are printed.\n"
           "--project records the export as a run of the project (its artifact); with --run N the report's\n"
           "curves come from run N's metric series (otherwise from the checkpoint's own reports).";
}

int run(const std::vector<std::string>& args) {
    ArgParser p("export", {"--as", "--out", "--project", "--run", "--gguf-type"}, {"--json", "--force"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("export: missing MODEL (a quantized checkpoint folder)");
    if (p.positional().size() > 1) throw UserError("export: unexpected argument '" + p.positional()[1] + "'");
    ExportRequest req;
    req.model = p.positional()[0];
    req.as = p.required("--as");
    req.out = p.required("--out");
    req.force = p.has("--force");
    req.gguf_type = p.value("--gguf-type").value_or("");
    req.run_id = p.integer("--run", 0);
    if (p.has("--run") && !p.has("--project")) throw UserError("export: --run needs --project P.qlab");
    if (p.has("--run") && req.run_id <= 0) throw UserError("export: --run must be a positive run id");
    if (p.has("--project") && req.run_id > 0) {
        // The run's series and configuration, read before anything is written.
        const auto file = projects::ProjectFile::open(*p.value("--project"), projects::OpenMode::ReadOnly);
        const projects::RunRecord run = file.run(req.run_id);
        req.project = *p.value("--project");
        req.run_config_json = run.config_json;
        if (run.seed && run.config_json.find("\"seed\"") == std::string::npos) {
            auto j = nlohmann::json::parse(run.config_json, nullptr, false);
            if (j.is_object()) req.run_config_json = (j["seed"] = *run.seed, j.dump());
        }
        for (projects::MetricSeries& s : file.load_metrics(req.run_id))
            req.series.push_back(ExportSeries{s.name, std::move(s.steps), std::move(s.values)});
    }

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink cli_sink;
    projects::ProjectRunInfo info = recorded_run_info(p, "export", req.as + " of " + req.model, req.model);
    info.config_json = nlohmann::json({{"model", req.model}, {"as", req.as}, {"out", req.out}, {"run", req.run_id}}).dump();
    ExportReport r;
    projects::run_recorded(p.value("--project"), info, cli_sink, [&](JobSink& sink) { r = run_export(req, sink, cancel); });
    cli_sink.finish_line();
    if (p.has("--json")) {
        nlohmann::json j = {{"as", r.as},         {"out", r.out},     {"bytes", r.bytes},
                            {"seconds", r.seconds}, {"files", r.files}, {"warnings", r.warnings}};
        j["doctor"] = r.doctor.layout.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(doctor_report_json(r.doctor));
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        for (const std::string& w : r.warnings) std::printf("warning      %s\n", w.c_str());
        if (!r.doctor.layout.empty()) std::printf("%s", doctor_report_text(r.doctor, false).c_str());
        std::printf("written      %s (%s, %lld files, %.1f KiB)\n", r.out.c_str(), r.as.c_str(),
                    static_cast<long long>(r.files.size()), static_cast<double>(r.bytes) / 1024.0);
        std::printf("seconds      %.2f\n", r.seconds);
    }
    return 0;
}

}  // namespace

Command export_command() {
    return Command{"export", usage(),
                   "export a quantized model: Model Optimizer or compressed-tensors HF checkpoint, GGUF, fake-quant FP, report", run};
}

}  // namespace ql::cli
