// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli stats MODEL [--recipe R] [--calib D] [--formats a,b] [--layers x,y] [--json]
// [--project P.qlab]: per-layer weight and activation statistics and every format's fit
// (docs/STATISTICS.md); --project stores them as layer statistics of a "stats" run.
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
#include "engine/api/layer_stats_api.h"
#include "engine/api/ptq_api.h"
#include "projects/layer_stats_records.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli stats MODEL [--recipe R] [--calib D] [--formats a,b,...] [--layers x,y,...] [--json]\n"
    "    [--device cpu|cuda|cuda:N]\n"
    "    [--project P.qlab] [--samples N] [--seq-len T] [--seed S] [--top-k K] [--bins B] [--reference R]\n"
    "    [--kv-cache K] [--rotate hadamard|rht|none]\n\n"
    "Per Linear / Conv2d layer: weight statistics (amax, percentiles of |w|, kurtosis, max/mean |w|, histograms,\n"
    "per-channel absmax, top-k outliers) and, with --calib D, the same for the layer's inputs on D; then for\n"
    "each format (default fp8_e4m3, nvfp4, mxfp4, mxfp6_e2m3, mxfp8_e4m3, int8, int4, nf4; the recipe's or the\n"
    "checkpoint's format first) the clipped fraction, weight MSE / SQNR, output SQNR and block scales.\n"
    "MODEL: an HF folder, 'demo', a QuantLab quantized checkpoint or a GGUF file (its own type per layer is the\n"
    "chosen format, with the block scales the file stores; --reference R, an FP model of the same shapes, gives\n"
    "the file's weight and output error against R). --project stores everything as layer\n"
    "statistics of a 'stats' run (docs/STATISTICS.md). --kv-cache K (with --calib) adds the cached keys and\n"
    "values of every attention layer, whole and per KV head, as records '<attention>.k_cache[.head<h>]' with K's\n"
    "grid; --rotate measures the rotated model (docs/RECIPES.md).";

std::string db(double v) {
    if (std::isnan(v)) return "-";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

void print_text(const LayerStatsReport& r) {
    std::printf("model  %s\n\n", r.model_path.c_str());
    // "int8 fp16": the input features LLM.int8() would compute in FP16 with all sampled tokens in one
    // call (|x| >= 6 in any token) and their share of the matmul.
    std::printf("%-36s %-8s %10s %10s %9s %9s %8s %18s\n", "layer", "chosen", "w amax", "w p99.9", "w kurt", "max/mean", "x kurt",
                "int8 fp16 features");
    for (const LayerStatistics& l : r.layers) {
        const double p999 = l.weight.percentiles.size() > 3 ? l.weight.percentiles[3].second : 0;
        std::string fp16 = "-";
        if (l.llm_int8.threshold > 0) {
            const int64_t features = l.weight_shape.size() > 1 ? l.weight_shape[1] : 0;
            char buf[48];
            std::snprintf(buf, sizeof buf, "%zu/%lld %.1f%%", l.llm_int8.columns.size(), static_cast<long long>(features),
                          100.0 * l.llm_int8.batch_flop_share);
            fp16 = buf;
        }
        std::printf("%-36s %-8s %10.4g %10.4g %9.2f %9.1f %8s %18s\n", l.layer.c_str(), l.chosen_format.empty() ? "-" : l.chosen_format.c_str(),
                    l.weight.amax, p999, l.weight.kurtosis, l.weight.max_over_mean_abs,
                    l.has_activation ? db(l.activation.kurtosis).c_str() : "-", fp16.c_str());
    }
    const bool outputs = !r.layers.empty() && r.layers.front().has_activation;
    std::printf("\n%s SQNR dB (layers x formats)\n%-36s", outputs ? "output" : "weight", "layer");
    for (const std::string& f : r.formats) std::printf(" %11s", f.c_str());
    std::printf("\n");
    for (const LayerStatistics& l : r.layers) {
        std::printf("%-36s", l.layer.c_str());
        for (const std::string& f : r.formats) {
            std::string cell = "n/a";
            for (const FormatFit& fit : l.fits)
                if (fit.format == f && fit.error.empty()) cell = db(outputs ? fit.output_sqnr_db : fit.weight_sqnr_db);
            std::printf(" %11s", cell.c_str());
        }
        std::printf("\n");
    }
    std::printf("\nseconds %.2f\n", r.seconds);
}

int run(const std::vector<std::string>& args) {
    ArgParser p("stats", {"--recipe", "--calib", "--formats", "--layers", "--project", "--samples", "--seq-len", "--seed", "--top-k", "--bins",
                          "--reference", "--kv-cache", "--rotate", "--device"},
                {"--json"});
    p.parse(args);
    if (p.positional().size() != 1) throw UserError("stats: expected one MODEL (an HF model folder, 'demo' or a checkpoint)");
    LayerStatsRequest req;
    req.model = p.positional()[0];
    req.device = device_option(p);
    req.recipe = p.value("--recipe").value_or("");
    req.calibration = p.value("--calib").value_or("");
    req.reference = p.value("--reference").value_or("");
    req.kv_cache = p.value("--kv-cache").value_or("");
    req.rotate = p.value("--rotate").value_or("");
    if (!req.kv_cache.empty() && req.calibration.empty())
        throw UserError("stats: --kv-cache needs --calib (keys and values come from a calibration pass)");
    if (p.has("--formats")) req.formats = split_list(*p.value("--formats"));
    if (p.has("--layers")) req.layers = split_list(*p.value("--layers"));
    req.samples = p.integer("--samples", 32);
    req.sequence_length = p.integer("--seq-len", 0);
    req.seed = p.seed();
    const int64_t top_k = p.integer("--top-k", 16), bins = p.integer("--bins", 128);
    if (req.samples <= 0 || req.sequence_length < 0) throw UserError("stats: --samples and --seq-len must be positive");
    if (top_k < 0 || top_k > 1 << 20) throw UserError("stats: --top-k must be in [0, 1048576]");
    if (bins < 1 || bins > 1 << 16) throw UserError("stats: --bins must be in [1, 65536]");
    req.top_k = static_cast<int>(top_k);
    req.bins = static_cast<int>(bins);

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink cli_sink;
    projects::ProjectRunInfo info = recorded_run_info(p, "stats", "stats of " + req.model, req.model, req.recipe, req.kv_cache,
                                                        req.rotate);
    info.config_json = nlohmann::json({{"model", req.model},
                                       {"recipe", req.recipe},
                                       {"calib", req.calibration},
                                       {"formats", req.formats},
                                       {"layers", req.layers},
                                       {"samples", req.samples},
                                       {"seed", req.seed},
                                       {"kv_cache", req.kv_cache},
                                       {"rotate", req.rotate}})
                           .dump();
    LayerStatsReport r;
    projects::run_recorded(p.value("--project"), info, cli_sink, [&](JobSink& sink) {
        r = run_layer_stats(req, sink, cancel);
        if (auto* recorder = dynamic_cast<projects::ProjectRunRecorder*>(&sink)) recorder->append_layer_stats(projects::to_project_records(r));
    });
    cli_sink.finish_line();
    if (p.has("--json"))
        std::printf("%s", projects::layer_stats_report_json(r).c_str());
    else
        print_text(r);
    return 0;
}

}  // namespace

Command stats_command() {
    return Command{"stats", kUsage, "per-layer weight / activation statistics and every format's fit (clipping, SQNR, scales)", run};
}

}  // namespace ql::cli
