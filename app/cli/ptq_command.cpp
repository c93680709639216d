// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli ptq MODEL --recipe R --calib D --out DIR [--project P.qlab]: post-training
// quantization with a recipe; writes a quantized checkpoint folder that every command taking
// MODEL reads back (docs/CLI.md "ptq", docs/RECIPES.md).
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "app/cli/recorded_run_info.h"
#include "projects/project_run_recorder.h"
#include "engine/core/errors.h"
#include "engine/api/eval_api.h"
#include "engine/api/ptq_api.h"
#include "engine/core/job_estimate.h"

namespace ql::cli {
namespace {

std::string usage() {
    std::string presets;
    for (const std::string& p : recipe_preset_names()) presets += (presets.empty() ? "" : ", ") + p;
    return "quantlab-cli ptq MODEL --recipe R --calib D [--out DIR] [--force] [--project P.qlab] [--json] [--dry-run]\n"
           "    [--ignore-memory-estimate]\n"
           "    [--device cpu|cuda|cuda:N]\n"
           "    [--samples N] [--seq-len T] [--batch-size B] [--seed S] [--dtype uint16|uint32] [--eval-data E]\n"
           "    [--imatrix F] [--eval-pairs P]\n"
           "    [--kv-cache fp8|fp8_cast|fp8_head|nvfp4|nvfp4_cast|nvfp4_rotate|int8|int8_head|int4|none]\n"
           "    [--rotate hadamard|rht|none]\n\n"
           "MODEL: an HF model folder, or 'demo'. R: a preset (" + presets + ") or a recipe JSON file (docs/RECIPES.md).\n"
           "D: calibration data (docs/DATA.md; the training split of synthetic tasks), e.g. synthetic:arith.\n"
           "DIR receives the quantized checkpoint (reloadable by eval, inspect, ptq ...) with ptq_report.json and\n"
           "ptq_report.csv. --project records the run, its per-layer metrics and the checkpoint in a project file.\n"
           "--eval-data E (needs --out) then evaluates the quantized model against MODEL on E's validation split and\n"
           "records eval/loss, eval/ppl, eval/exact_match, eval/kl ... at step 0, as the GUI's PTQ runs do; for a sentence\n"
           "encoder eval/cosine_mean, eval/cosine_p5, eval/cosine_min, and with --eval-pairs P (a pairs file)\n"
           "eval/spearman and eval/teacher_spearman.\n"
           "--imatrix F: an importance matrix (quantlab-cli imatrix, llama-imatrix) for weight calibrator imatrix_mse\n"
           "(replaces the recipe's \"imatrix\").\n"
           "--kv-cache / --rotate put a KV-cache format / a rotation on top of R (its kv_cache / rotation section is\n"
           "replaced; docs/RECIPES.md), as Model Optimizer's --kv_cache_qformat does.\n"
           "Before any work the peak memory and time are estimated from the model's shapes, the recipe, the data and a\n"
           "short measurement of this machine; --dry-run prints the estimate and stops, and a run whose peak would not fit\n"
           "in the free memory stops with what it needs, what is free and which setting lowers it\n"
           "(--ignore-memory-estimate runs anyway). Decoders run layer by layer (docs/RECIPES.md \"Layer by layer\"); above\n"
           "1 GB of weights the checkpoint is written block by block. MODEL may be a Hugging Face id in the local cache.\n"
           "Ctrl-C cancels (exit code 130) and leaves no partial output.";
}

std::string db(double v) {
    char buf[32];
    if (!std::isfinite(v)) return v > 0 ? "inf" : "-";
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

void print_text(const PtqSummary& s) {
    std::printf("model        %s\n", s.model_path.c_str());
    std::printf("recipe       %s (%s)\n", s.recipe_name.c_str(), s.method.c_str());
    std::printf("calibration  %s (%lld examples)\n", s.calibration.c_str(), static_cast<long long>(s.calibration_examples));
    std::printf("\n%-40s %-24s %-26s %-11s %9s %9s\n", "layer", "weight", "input", "method", "SQNR dB", "RTN dB");
    for (const PtqLayerSummary& l : s.layers)
        std::printf("%-40s %-24s %-26s %-11s %9s %9s\n", l.layer.c_str(), l.weight_quantizer.c_str(),
                    l.input_quantizer.c_str(), l.method.c_str(), db(l.output_sqnr_db).c_str(),
                    db(l.rtn_output_sqnr_db).c_str());
    std::printf("\nparameters   %lld (%lld quantized)\n", static_cast<long long>(s.parameters),
                static_cast<long long>(s.quantized_parameters));
    std::printf("size         %.3f bits/parameter, %.1f KiB (BF16: %.1f KiB)\n", s.bits_per_parameter, s.model_bytes / 1024.0,
                s.fp16_bytes / 1024.0);
    if (s.kv_memory.layers > 0)
        std::printf("KV cache     %s: %.1f B/token, %.2f MiB per 8k context (BF16: %.2f MiB)\n", s.kv_cache.c_str(),
                    s.kv_memory.bytes_per_token, s.kv_memory.bytes_8k() / 1048576.0, s.kv_memory.fp16_bytes_8k() / 1048576.0);
    if (!s.kv_cache_layers.empty()) {
        std::printf("\n%-40s %-34s %9s %9s %11s %11s\n", "attention", "KV cache", "K dB", "V dB", "k_scale", "v_scale");
        for (const PtqKvCacheSummary& k : s.kv_cache_layers) {
            auto first = [](const std::vector<float>& v) { return v.empty() ? std::string("-") : std::to_string(v[0]); };
            std::printf("%-40s %-34s %9s %9s %11s %11s\n", k.attention.c_str(), k.quantizer.c_str(), db(k.key_sqnr_db).c_str(),
                        db(k.value_sqnr_db).c_str(), first(k.key_scale).c_str(), first(k.value_scale).c_str());
        }
    }
    if (s.rotation != "off") {
        std::printf("rotation     %s\n", s.rotation.c_str());
        for (const std::string& n : s.rotation_notes) std::printf("             %s\n", n.c_str());
    }
    if (!s.out_dir.empty()) std::printf("written      %s\n", s.out_dir.c_str());
    std::printf("seconds      %.2f\n", s.seconds);
}

nlohmann::json estimate_json(const JobEstimate& e) {
    nlohmann::json parts = nlohmann::json::array();
    for (const JobEstimate::Part& part : e.parts) parts.push_back({{"what", part.what}, {"bytes", part.bytes}});
    return {{"job", e.job},
            {"peak_bytes", e.peak_bytes},
            {"current_bytes", e.current_bytes},
            {"available_bytes", e.available_bytes},
            {"fits", e.fits()},
            {"parts", parts},
            {"seconds", e.seconds},
            {"work_flops", e.work_flops},
            {"gflops", e.gflops},
            {"advice", e.advice}};
}

int run(const std::vector<std::string>& args) {
    ArgParser p("ptq", {"--recipe", "--calib", "--out", "--project", "--samples", "--seq-len", "--batch-size", "--seed", "--dtype",
                        "--eval-data", "--imatrix", "--eval-pairs", "--kv-cache", "--rotate", "--device"},
                {"--json", "--force", "--dry-run", "--ignore-memory-estimate"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("ptq: missing MODEL (an HF model folder or 'demo')");
    if (p.positional().size() > 1) throw UserError("ptq: unexpected argument '" + p.positional()[1] + "'");
    PtqRequest req;
    req.model = p.positional()[0];
    req.device = device_option(p);
    req.recipe = p.required("--recipe");
    req.calibration = p.required("--calib");
    req.out_dir = p.value("--out").value_or("");
    req.force = p.has("--force");
    req.samples = p.positive_integer("--samples");
    req.sequence_length = p.positive_integer("--seq-len");
    req.batch_size = p.positive_integer("--batch-size");
    req.seed = p.seed();
    req.token_dtype = p.value("--dtype").value_or("");
    req.imatrix = p.value("--imatrix").value_or("");
    req.kv_cache = p.value("--kv-cache").value_or("");
    req.rotate = p.value("--rotate").value_or("");
    req.dry_run = p.has("--dry-run");
    req.ignore_memory_estimate = p.has("--ignore-memory-estimate");
    if (req.dry_run) {
        CliJobSink quiet(true);
        CancellationToken none;
        const PtqSummary s = run_ptq(req, quiet, none);
        if (p.has("--json"))
            std::printf("%s\n", nlohmann::json({{"model", s.model_path},
                                                 {"recipe", s.recipe_name},
                                                 {"calibration_examples", s.calibration_examples},
                                                 {"estimate", estimate_json(s.estimate)}})
                                     .dump(2)
                                     .c_str());
        else
            std::printf("%s", job_estimate_text(s.estimate).c_str());
        return 0;
    }
    const std::optional<std::string> eval_data = p.value("--eval-data");
    if (eval_data && req.out_dir.empty()) throw UserError("ptq: --eval-data needs --out (the checkpoint to evaluate)");
    const std::string eval_pairs = p.value("--eval-pairs").value_or("");
    if (!eval_pairs.empty() && !eval_data) throw UserError("ptq: --eval-pairs goes with --eval-data");

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink cli_sink;
    projects::ProjectRunInfo info = recorded_run_info(p, "ptq", req.recipe + " on " + path_label(req.model), req.model, req.recipe, req.kv_cache,
                                                        req.rotate);
    info.config_json = nlohmann::json({{"model", req.model},
                                       {"recipe", req.recipe},
                                       {"calib", req.calibration},
                                       {"out", req.out_dir},
                                       {"samples", req.samples},
                                       {"seed", req.seed},
                                       {"kv_cache", req.kv_cache},
                                       {"rotate", req.rotate},
                                       {"device", req.device}})
                           .dump();
    PtqSummary s;
    projects::run_recorded(p.value("--project"), info, cli_sink, [&](JobSink& sink) {
        s = run_ptq(req, sink, cancel);
        if (eval_data) {
            EvalRequest e;
            e.model = req.out_dir;
            e.teacher = req.model;
            e.data = *eval_data;
            e.split = "validation";
            e.seed = req.seed;
            e.token_dtype = req.token_dtype;
            e.pairs = eval_pairs;
            e.device = req.device;
            report_eval_metrics(sink, 0, run_eval(e, sink, cancel));
        }
    });
    cli_sink.finish_line();
    if (p.has("--json"))
        std::printf("%s", ptq_report_json(s).c_str());
    else
        print_text(s);
    return 0;
}

}  // namespace

Command ptq_command() {
    return Command{"ptq", usage(), "post-training quantization with a recipe (RTN, SmoothQuant, AWQ, GPTQ); writes a checkpoint",
                   run};
}

}  // namespace ql::cli
