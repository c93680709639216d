// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli export MODEL --as hf-modelopt|compressed-tensors|gguf|onnx|fakequant|report --out PATH [--force]
//     [--project P.qlab [--run N]]: writes a quantized checkpoint for deployment tools, as a
// fake-quantized FP checkpoint, or as a report (docs/EXPORT.md, docs/CLI.md "export").
#include <cstdio>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "app/cli/doctor_text.h"
#include "app/cli/recorded_run_info.h"
#include "projects/evalsuite_records.h"
#include "projects/project_run_recorder.h"
#include "engine/core/errors.h"
#include "engine/api/doctor_api.h"
#include "engine/api/export_api.h"
#include "engine/api/lora_api.h"
#include "engine/api/ptq_api.h"

namespace ql::cli {
namespace {

std::string usage() {
    return "quantlab-cli export MODEL --as hf-modelopt|compressed-tensors|gguf|onnx|fakequant|report --out PATH [--force]\n"
           "    [--device cpu|cuda|cuda:N]\n"
           "    [--gguf-type T[,T...]] [--project P.qlab [--run N]] [--json]\n"
           "  GGUF only: [--tensor-type REGEX=TYPE ...] [--imatrix F] [--gguf-source f16|bf16|f32] [--pure] [--strict]\n"
           "    [--output-tensor-type TYPE] [--token-embedding-type TYPE] [--dry-run]\n\n"
           "MODEL: a quantized checkpoint folder written by 'quantlab-cli ptq' or 'train' (or 'demo').\n"
           "  hf-modelopt  NVIDIA Model Optimizer HF checkpoint (NVFP4, FP8, INT4 AWQ/GPTQ, MXFP4): vLLM, TensorRT-LLM\n"
           "  compressed-tensors  vLLM / llm-compressor checkpoint (INT4/INT8 W4A16/W8A16/W8A8, FP8, NVFP4, MXFP4)\n"
           "  onnx         ONNX QDQ model (opset 23; model.onnx + model.onnx.data) of a Llama-family decoder: INT8 / FP8\n"
           "               Q/DQ pairs, blocked INT4 weight-only DQ; ONNX Runtime, TensorRT\n"
           "  gguf         llama.cpp GGUF file; MODEL may also be an HF folder or a GGUF file. T is a llama.cpp file\n"
           "               type (f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q2_k_s q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m\n"
           "               q5_k_s q5_k_m q6_k iq4_nl iq4_xs iq3_xs iq3_xxs iq3_s iq3_m iq2_xxs iq2_xs iq2_s iq2_m iq1_s\n"
           "               iq1_m tq1_0 tq2_0 mxfp4_moe; mxfp4 = MXFP4 everywhere; iq1/iq2/iq3_xxs need --imatrix, as in\n"
           "               llama-quantize) and each tensor gets the\n"
           "               type llama-quantize would give it (from an F16 GGUF: --gguf-source); --tensor-type overrides\n"
           "               (first match wins), --imatrix quantizes with an importance matrix (quantlab-cli imatrix or\n"
           "               llama-imatrix), --pure gives every matrix the base type. Every tensor that does not get its\n"
           "               type (rows not a multiple of 256 ...) is listed; --strict makes that an error. --dry-run prints\n"
           "               the plan without writing. Several types (--gguf-type q4_k_m,q5_k_m,q8_0): PATH is a folder\n"
           "               that gets one file a type, PATH/TYPE.gguf, in one process (--json: {\"exports\": [...]}).\n"
           "  fakequant    the model's HF layout with dequantized weights + quantlab_recipe.json\n"
           "  report       folder with report.html (self-contained), metrics.csv, recipe.json\n"
           "PATH must not exist unless --force. Writing is crash-safe: PATH appears only when complete.\n"
           "The Export Doctor checks every model export before it is renamed into place (see 'quantlab-cli doctor');\n"
           "an error finding aborts the export (exit 1), warnings are printed.\n"
           "--project records the export as a run of the project (its artifact); with --run N the report's\n"
           "curves come from run N's metric series (otherwise from the checkpoint's own reports).\n"
           "MODEL a LoRA run (DIR of 'train lora|qlora'): --as peft (the adapter as PEFT loads it), merged-fp (the merged\n"
           "model in full precision, an HF folder), merged-hf-modelopt | merged-compressed-tensors | merged-gguf |\n"
           "merged-fakequant (merged, quantized again in the base's recipe, written by that exporter). See\n"
           "'quantlab-cli lora preview' for what merging costs.";
}

nlohmann::json gguf_json(const GgufExportResult& g) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const GgufExportTensor& t : g.tensors)
        tensors.push_back({{"name", t.name},          {"source", t.source},       {"type", t.type},
                           {"requested", t.requested}, {"rule", t.rule},           {"fallback", t.fallback},
                           {"ne", t.ne},              {"bytes", t.bytes},          {"from_quantized", t.from_quantized},
                           {"imatrix", t.importance}, {"copied", t.copied}});
    return {{"architecture", g.architecture}, {"type", g.type},           {"file_type", g.file_type},
            {"source_precision", g.source_precision}, {"imatrix", g.imatrix.empty() ? nlohmann::json(nullptr) : nlohmann::json(g.imatrix)},
            {"from_checkpoint", g.from_checkpoint}, {"from_gguf", g.from_gguf}, {"dry_run", g.dry_run},
            {"tokenizer", g.tokenizer_source}, {"parameters", g.parameters}, {"bits_per_weight", g.bits_per_weight},
            {"fallbacks", g.fallbacks}, {"tensors", tensors}};
}

// The plan, as llama-quantize logs it: one line per tensor with its type and why.
void print_gguf_plan(const GgufExportResult& g) {
    std::printf("gguf         %s (file type %u), %s source%s\n", g.type.c_str(), g.file_type, g.source_precision.c_str(),
                g.imatrix.empty() ? "" : (", imatrix " + g.imatrix).c_str());
    std::printf("%-28s %-14s %-7s  %s\n", "tensor", "ne", "type", "why");
    for (const GgufExportTensor& t : g.tensors) {
        std::string ne;
        for (size_t i = 0; i < t.ne.size(); ++i) ne += (i ? "x" : "") + std::to_string(t.ne[i]);
        std::printf("%-28s %-14s %-7s  %s%s%s\n", t.name.c_str(), ne.c_str(), t.type.c_str(), t.rule.c_str(),
                    t.fallback.empty() ? "" : "; FALLBACK ", t.fallback.c_str());
    }
    std::printf("%-28s %llu parameters, %.3f bits per weight, %zu fallback(s)\n", "total",
                static_cast<unsigned long long>(g.parameters), g.bits_per_weight, g.fallbacks.size());
}

nlohmann::json export_json(const ExportReport& r) {
    nlohmann::json j = {{"as", r.as},         {"out", r.out},   {"bytes", r.bytes},
                        {"seconds", r.seconds}, {"files", r.files}, {"warnings", r.warnings}};
    if (r.gguf) j["gguf"] = gguf_json(*r.gguf);
    j["doctor"] = r.doctor.layout.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(doctor_report_json(r.doctor));
    return j;
}

// --as gguf --gguf-type T1,T2,...: a ladder of GGUF files of one model, OUT/T.gguf each, in one
// process (a script that makes ten types pays LibTorch's start-up once). Each file is the export
// that `--gguf-type T --out OUT/T.gguf` writes, byte for byte.
int run_gguf_ladder(const ArgParser& p, const ExportRequest& base, const std::vector<std::string>& types,
                    const CancellationToken& cancel) {
    if (base.as != "gguf") throw UserError("export: several --gguf-type values apply to --as gguf only");
    if (p.has("--project")) throw UserError("export: several --gguf-type values cannot be recorded in a project; export one type");
    if (is_lora_run(base.model)) throw UserError("export: several --gguf-type values need a model, not a LoRA run");
    if (!base.gguf.dry_run) {
        if (std::filesystem::exists(base.out) && !std::filesystem::is_directory(base.out))
            throw UserError("export: --out " + base.out + " must be a folder when --gguf-type names several types");
        std::filesystem::create_directories(base.out);
    }
    nlohmann::json exports = nlohmann::json::array();
    for (const std::string& type : types) {
        ExportRequest req = base;
        req.gguf_type = type;
        req.out = (std::filesystem::path(base.out) / (type + ".gguf")).string();
        CliJobSink cli_sink;
        const ExportReport r = run_export(req, cli_sink, cancel);
        cli_sink.finish_line();
        if (p.has("--json")) {
            exports.push_back(export_json(r));
            continue;
        }
        if (r.gguf) print_gguf_plan(*r.gguf);
        for (const std::string& w : r.warnings) std::printf("warning      %s\n", w.c_str());
        if (r.gguf && r.gguf->dry_run)
            std::printf("dry run      nothing written (%.1f KiB planned)\n", static_cast<double>(r.bytes) / 1024.0);
        else
            std::printf("written      %s (%.1f KiB, %.2f s)\n", r.out.c_str(), static_cast<double>(r.bytes) / 1024.0, r.seconds);
    }
    if (p.has("--json")) std::printf("%s\n", nlohmann::json({{"exports", exports}}).dump(2).c_str());
    return 0;
}

int run(const std::vector<std::string>& args) {
    ArgParser p("export",
                {"--device", "--as", "--out", "--project", "--run", "--gguf-type", "--tensor-type", "--imatrix", "--gguf-source",
                 "--output-tensor-type", "--token-embedding-type"},
                {"--json", "--force", "--pure", "--strict", "--dry-run"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("export: missing MODEL (a quantized checkpoint folder)");
    if (p.positional().size() > 1) throw UserError("export: unexpected argument '" + p.positional()[1] + "'");
    ExportRequest req;
    req.model = p.positional()[0];
    req.device = device_option(p);
    req.as = p.required("--as");
    req.out = p.required("--out");
    req.force = p.has("--force");
    req.gguf_type = p.value("--gguf-type").value_or("");
    req.gguf.tensor_types = p.values("--tensor-type");
    req.gguf.imatrix = p.value("--imatrix").value_or("");
    req.gguf.source_precision = p.value("--gguf-source").value_or("");
    req.gguf.output_tensor_type = p.value("--output-tensor-type").value_or("");
    req.gguf.token_embedding_type = p.value("--token-embedding-type").value_or("");
    req.gguf.pure = p.has("--pure");
    req.gguf.strict = p.has("--strict");
    req.gguf.dry_run = p.has("--dry-run");
    for (const char* o : {"--tensor-type", "--imatrix", "--gguf-source", "--output-tensor-type", "--token-embedding-type",
                          "--pure", "--strict", "--dry-run"})
        if (p.has(o) && req.as != "gguf") throw UserError(std::string("export: ") + o + " applies to --as gguf only");
    if (req.gguf.dry_run && p.has("--project")) throw UserError("export: --dry-run writes nothing; drop --project");
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

    // The report's "Evaluation" section: the project's evaluation of this checkpoint, if any.
    if (req.as == "report" && p.has("--project") && std::filesystem::exists(*p.value("--project")))
        req.evaluations = projects::evaluations_of_model(*p.value("--project"), resolved_model_folder(req.model));

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    const std::vector<std::string> ladder = split_list(req.gguf_type);
    if (ladder.size() > 1) return run_gguf_ladder(p, req, ladder, cancel);
    CliJobSink cli_sink;
    projects::ProjectRunInfo info = recorded_run_info(p, "export", req.as + " of " + req.model, req.model);
    info.config_json = nlohmann::json({{"model", req.model}, {"as", req.as}, {"out", req.out}, {"run", req.run_id}}).dump();
    ExportReport r;
    // A LoRA run exports its adapter, or the merged model (engine/api/lora_api.h).
    const bool lora = is_lora_run(req.model);
    if (!lora && req.as.rfind("merged-", 0) == 0) throw UserError("export: --as " + req.as + " needs a LoRA run as MODEL");
    if (!lora && req.as == "peft") throw UserError("export: --as peft needs a LoRA run as MODEL (DIR of 'train lora|qlora')");
    LoraExportRequest lora_req{req.model, req.as, req.out, req.force, req.gguf_type, req.device};
    projects::run_recorded(p.value("--project"), info, cli_sink, [&](JobSink& sink) {
        r = lora ? run_lora_export(lora_req, sink, cancel) : run_export(req, sink, cancel);
    });
    cli_sink.finish_line();
    if (p.has("--json")) {
        std::printf("%s\n", export_json(r).dump(2).c_str());
    } else {
        if (r.gguf) print_gguf_plan(*r.gguf);
        for (const std::string& w : r.warnings) std::printf("warning      %s\n", w.c_str());
        if (r.gguf && r.gguf->dry_run) {
            std::printf("dry run      nothing written (%.1f KiB planned, %.3f bits per weight)\n", static_cast<double>(r.bytes) / 1024.0,
                        r.gguf->bits_per_weight);
            return 0;
        }
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
                   "export a quantized model: Model Optimizer or compressed-tensors HF checkpoint, GGUF, ONNX, fake-quant FP, report", run};
}

}  // namespace ql::cli
