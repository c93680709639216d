// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/export_api.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"
#include "engine/export/compressed_tensors_export.h"
#include "engine/export/export_doctor.h"
#include "engine/export/export_report.h"
#include "engine/export/fakequant_export.h"
#include "engine/export/gguf_export.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/export/llama_tensor_types.h"
#include "engine/export/modelopt_plan.h"
#include "engine/export/onnx_export.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"

#include <nlohmann/json.hpp>

namespace ql {

std::vector<std::string> export_kinds() { return {"hf-modelopt", "compressed-tensors", "gguf", "onnx", "fakequant", "report"}; }

namespace {

// A UserError listing the doctor's error findings (the export is not committed).
void refuse_on_errors(const DoctorReport& r, const std::string& out) {
    if (r.ok()) return;
    std::string msg = "export: the Export Doctor found " + std::to_string(r.errors()) + " error(s) in " + out +
                      ", so it was not written:";
    int shown = 0;
    for (const DoctorFinding& f : r.findings) {
        if (f.severity != DoctorSeverity::Error) continue;
        if (++shown > 8) {
            msg += "\n  ...";
            break;
        }
        msg += "\n  " + f.where + ": " + f.problem + " (" + f.consumer + "; fix: " + f.fix + ")";
    }
    throw UserError(msg);
}

}  // namespace

ExportReport run_export(const ExportRequest& req, JobSink& sink, const CancellationToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::string> kinds = export_kinds();
    if (std::find(kinds.begin(), kinds.end(), req.as) == kinds.end())
        throw UserError("export: --as must be one of hf-modelopt, compressed-tensors, gguf, onnx, fakequant, report; got '" + req.as + "'");
    if (req.out.empty()) throw UserError("export: an output path is required (--out)");
    const at::Device device = torch_device(req.device);
    std::error_code ec;
    if (!req.force && !(req.as == "gguf" && req.gguf.dry_run) && std::filesystem::exists(req.out, ec))
        throw UserError("export: " + req.out + " already exists (pass --force to replace it)");
    if (req.as == "gguf") {
        // GGUF takes FP HF folders too (llama.cpp quantizes them itself), so no quantized-model
        // requirement here: engine/export/gguf_export.h decides per tensor.
        GgufExportOptions options = req.gguf;
        options.type = req.gguf_type.empty() ? GgufExportOptions{}.type : req.gguf_type;
        options.force = req.force;
        const GgufExportResult g = export_gguf(req.model, req.out, options, sink, cancel);
        ExportReport rep;
        rep.as = req.as;
        rep.out = g.path;
        rep.bytes = static_cast<int64_t>(g.bytes);
        rep.files = {g.path, g.plan_path};
        rep.warnings = g.warnings;
        rep.gguf = g;
        if (g.dry_run) rep.files.clear();
        if (!g.dry_run) rep.doctor = run_export_doctor(g.path);
        rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return rep;
    }
    sink.progress(0, 0, "load");
    OpenedModel m = open_model(req.model);
    if (!m.quantization)
        throw UserError("export: " + req.model + " is not a quantized model; run 'quantlab-cli ptq' (or train) first and "
                        "export its output folder");
    // The quantized weights are computed there; the exporters write from CPU copies. (GGUF above
    // encodes on the host: llama.cpp's block searches are host code.)
    move_opened_model(m, device);
    cancel.throw_if_cancelled();
    FolderExportResult r;
    DoctorReport doctor;
    const FolderCheck check = [&](const std::string& partial) {
        sink.progress(0, 1, "doctor");
        doctor = run_export_doctor(partial, req.out);
        refuse_on_errors(doctor, req.out);
        sink.progress(1, 1, "doctor");
    };
    if (req.as == "hf-modelopt")
        r = export_hf_modelopt(*m.quantization, m.path, req.out, req.force, sink, cancel, check);
    else if (req.as == "compressed-tensors")
        r = export_compressed_tensors(*m.quantization, m.path, req.out, req.force, sink, cancel, check);
    else if (req.as == "onnx")
        r = export_onnx(*m.quantization, m.path, req.out, req.force, sink, cancel, check);
    else if (req.as == "fakequant")
        r = export_fakequant(*m.quantization, m.path, req.out, req.force, sink, cancel, check);
    else {
        ReportInputs in;
        in.model_name = req.model;
        in.folder = m.path;
        in.quantized = m.quantization.get();
        in.series = req.series;
        in.project = req.project;
        in.run_id = req.run_id;
        in.run_config_json = req.run_config_json;
        in.evaluations = req.evaluations;
        r = export_report(in, req.out, req.force, sink, cancel);
    }
    for (const std::string& w : r.warnings) sink.log(LogLevel::Warning, "export: " + w);
    sink.artifact(req.as, req.out);
    ExportReport rep;
    rep.as = req.as;
    rep.out = req.out;
    rep.bytes = r.bytes;
    rep.files = r.files;
    rep.warnings = r.warnings;
    rep.doctor = doctor;
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return rep;
}

std::vector<std::string> plan_export_kinds() { return {"compressed-tensors", "modelopt", "llama-tensor-types"}; }

PlanExport export_plan(const std::string& model, const std::string& recipe, const std::string& as) {
    const std::vector<std::string> kinds = plan_export_kinds();
    if (std::find(kinds.begin(), kinds.end(), as) == kinds.end())
        throw UserError("plan export: --as must be one of compressed-tensors, modelopt, llama-tensor-types; got '" + as + "'");
    const Recipe r = !recipe.empty() && recipe.front() == '{' ? parse_recipe(recipe, "plan") : load_recipe(recipe);
    OpenedModel opened = open_model(model);
    if (opened.quantization) throw UserError("plan export: " + opened.path + " is already quantized; give its source model");
    QuantizedModel q(*opened.model, r);  // the plan's patterns resolved to the model's layers
    q.set_enabled(true);                 // as after calibration: every configured quantizer on
    PlanExport out;
    if (as == "modelopt") {
        ModeloptPlanCounts n;
        out.text = modelopt_plan_config(q, &n).dump(2) + "\n";
        out.quantized_layers = n.quantized_layers;
        out.ignored_layers = n.disabled_layers;
        return out;
    }
    if (as == "llama-tensor-types") {
        const LlamaTensorTypePlan p = llama_tensor_type_plan(q);
        out.text = p.text;
        out.quantized_layers = p.quantized_layers;
        out.ignored_layers = p.high_precision_layers;
        return out;
    }
    const nlohmann::json qc = ct_plan_quantization_config(q);
    out.text = qc.dump(2) + "\n";
    out.groups = static_cast<int64_t>(qc["config_groups"].size());
    for (const auto& [name, g] : qc["config_groups"].items()) out.quantized_layers += static_cast<int64_t>(g["targets"].size());
    out.ignored_layers = static_cast<int64_t>(qc["ignore"].size());
    return out;
}

}  // namespace ql
