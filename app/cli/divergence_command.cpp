// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli divergence MODEL --recipe R | --quantized CKPT --data D [--json]: where a quantized
// model's error comes from -- the residual stream's error block by block (propagated and
// isolated, per attention / MLP half), what each block adds to the final KL, and the per-token
// divergence statistics (docs/CLI.md "divergence", docs/DIAGNOSIS.md).
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "app/cli/recorded_run_info.h"
#include "engine/api/divergence_api.h"
#include "engine/api/divergence_json.h"
#include "engine/api/eval_api.h"
#include "engine/core/errors.h"
#include "projects/divergence_records.h"
#include "projects/project_run_recorder.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli divergence MODEL (--recipe R | --quantized CKPT) --data D [--json] [--project P.qlab]\n"
    "    [--device cpu|cuda|cuda:N]\n"
    "    [--calib C] [--calib-samples N] [--split train|validation|all] [--samples N] [--seed S] [--seq-len T]\n"
    "    [--batch-size B] [--worst-tokens K] [--dtype uint16|uint32]\n\n"
    "MODEL: the full-precision model (an HF folder or 'demo'). --recipe R quantizes a copy of it now (PTQ,\n"
    "calibrated on C, default D's training split); --quantized CKPT compares a checkpoint of ptq, train or an\n"
    "hf-modelopt export instead. Both run side by side on D (default: held-out problems of synthetic tasks).\n"
    "Per block: the residual stream's error with everything before quantized (propagated) and with only the\n"
    "block quantized on the FP stream (isolated), for the block and for its attention and MLP halves; at the\n"
    "logits the KL each block adds; per token llama.cpp's KL statistics and the worst tokens in context.\n"
    "--project stores the report as a 'divergence' run (the GUI's Depth and Tokens tabs).\n"
    "Ctrl-C cancels (exit code 130).";

std::string num(double v, const char* fmt = "%.4g") {
    if (std::isnan(v)) return "-";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[48];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

std::string num(const std::optional<double>& v, const char* fmt = "%.4g") { return v ? num(*v, fmt) : "-"; }

void print_text(const DivergenceReport& r) {
    std::printf("model        %s\n", r.model.c_str());
    std::printf("quantized    %s%s\n", r.quantized.c_str(), r.recipe.empty() || r.recipe == r.quantized ? "" : (" (" + r.recipe + ")").c_str());
    std::printf("data         %s (%s, %lld examples, %lld scored tokens)\n\n", r.data.c_str(), r.split.c_str(),
                static_cast<long long>(r.examples), static_cast<long long>(r.scored_tokens));
    std::printf("%-22s %9s %8s %8s %9s %9s %9s %10s %10s %10s\n", "block", "prop rel", "SQNR dB", "cos", "iso rel",
                "attn iso", "mlp iso", "KL prop", "KL added", "KL iso");
    std::printf("%-22s %9s %8s %8s %9s %9s %9s %10s %10s %10s\n", "embeddings", num(r.embeddings.rel_l2).c_str(),
                num(r.embeddings.sqnr_db, "%.1f").c_str(), num(r.embeddings.cosine, "%.5f").c_str(), "", "", "",
                num(r.embeddings_kl).c_str(), num(r.embeddings_kl).c_str(), "");
    for (const BlockDivergence& b : r.blocks)
        std::printf("%-22s %9s %8s %8s %9s %9s %9s %10s %10s %10s\n", b.name.c_str(), num(b.block.propagated.rel_l2).c_str(),
                    num(b.block.propagated.sqnr_db, "%.1f").c_str(), num(b.block.propagated.cosine, "%.5f").c_str(),
                    num(b.block.isolated.rel_l2).c_str(), num(b.attention.isolated.rel_l2).c_str(),
                    num(b.mlp.isolated.rel_l2).c_str(), num(b.block.kl_propagated).c_str(),
                    num(b.block.kl_increment).c_str(), num(b.block.kl_isolated).c_str());
    if (r.kl) {
        double sum = r.embeddings_kl.value_or(0) + r.head_kl_increment.value_or(0);
        for (const BlockDivergence& b : r.blocks) sum += b.block.kl_increment.value_or(0);
        std::printf("%-22s %9s %8s %8s %9s %9s %9s %10s %10s\n", "head", "", "", "", "", "", "", num(r.kl).c_str(),
                    num(r.head_kl_increment).c_str());
        std::printf("\nKL(FP||Q)    %s nats/token (increments add up to %s; isolated KLs of the blocks add up to %s)\n",
                    num(r.kl, "%.6g").c_str(), num(sum, "%.6g").c_str(), num(r.isolated_kl_sum, "%.6g").c_str());
    }
    if (r.sentence_cosine) std::printf("\nsentence-embedding cosine  %s (mean-pooled, per example)\n", num(*r.sentence_cosine, "%.6f").c_str());
    if (r.tokens) {
        const TokenDivergenceSummary& t = *r.tokens;
        std::printf("tokens       KL mean %s  median %s  p90 %s  p95 %s  p99 %s  max %s\n", num(t.kl_mean).c_str(),
                    num(t.kl_median).c_str(), num(t.kl_p90).c_str(), num(t.kl_p95).c_str(), num(t.kl_p99).c_str(),
                    num(t.kl_max).c_str());
        std::printf("             same top-1 %s %%  RMS dp %s %%  PPL %s -> %s (%s)\n", num(100 * t.same_top1, "%.2f").c_str(),
                    num(100 * t.rms_delta_p, "%.3f").c_str(), num(t.ppl_fp, "%.5g").c_str(), num(t.ppl_q, "%.5g").c_str(),
                    num(t.delta_ppl, "%+.4g").c_str());
    }
    if (!r.worst_tokens.empty()) {
        std::printf("\nworst tokens%s\n", r.encoder ? " (relative error of the output)" : " (KL, target, FP top-1 -> quantized top-1)");
        for (size_t i = 0; i < r.worst_tokens.size() && i < 10; ++i) {
            const TokenDivergence& t = r.worst_tokens[i];
            std::printf("  %9s  %s[%s]%s", num(t.kl).c_str(), t.context.c_str(), t.target.c_str(), t.continuation.c_str());
            if (!r.encoder)
                std::printf("   %s %.2f -> %s %.2f", t.fp_top1.c_str(), t.p_fp_top1, t.q_top1.c_str(), t.p_q_top1);
            if (!t.worst_layers.empty()) std::printf("   worst layer %s", t.worst_layers.front().first.c_str());
            std::printf("\n");
        }
    }
    std::printf("\nseconds      %.2f\n", r.seconds);
}

int run(const std::vector<std::string>& args) {
    ArgParser p("divergence",
                {"--device", "--recipe", "--quantized", "--data", "--calib", "--calib-samples", "--split", "--samples", "--seed",
                 "--seq-len", "--batch-size", "--worst-tokens", "--dtype", "--project"},
                {"--json"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("divergence: missing MODEL (the full-precision model: an HF folder or 'demo')");
    if (p.positional().size() > 1) throw UserError("divergence: unexpected argument '" + p.positional()[1] + "'");
    DivergenceRequest req;
    req.model = p.positional()[0];
    req.device = device_option(p);
    req.recipe = p.value("--recipe").value_or("");
    req.quantized = p.value("--quantized").value_or("");
    req.data = p.required("--data");
    req.calibration = p.value("--calib").value_or("");
    req.calibration_samples = p.positive_integer("--calib-samples");
    req.split = p.value("--split").value_or("");
    if (!req.split.empty()) req.split = normalise_split_name(req.split);
    req.samples = p.positive_integer("--samples");
    req.seed = p.seed();
    req.sequence_length = p.positive_integer("--seq-len");
    if (p.has("--batch-size")) req.batch_size = p.positive_integer("--batch-size");
    req.worst_tokens = p.integer("--worst-tokens", req.worst_tokens);
    if (req.worst_tokens < 0 || req.worst_tokens > 100000)
        throw UserError("divergence: --worst-tokens must be in [0, 100000]");
    req.token_dtype = p.value("--dtype").value_or("");
    if (!req.token_dtype.empty() && req.token_dtype != "uint16" && req.token_dtype != "uint32")
        throw UserError("divergence: --dtype must be uint16 or uint32, got '" + req.token_dtype + "'");
    if (req.recipe.empty() == req.quantized.empty())
        throw UserError("divergence: give exactly one of --recipe R and --quantized CKPT");
    if (!req.quantized.empty() && (p.has("--calib") || p.has("--calib-samples")))
        throw UserError("divergence: --calib applies to --recipe (a checkpoint is calibrated already)");

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink cli_sink;
    projects::ProjectRunInfo info = recorded_run_info(
        p, "divergence", "divergence of " + (req.recipe.empty() ? req.quantized : req.recipe), req.model, req.recipe);
    info.config_json = nlohmann::json({{"model", req.model},
                                       {"recipe", req.recipe},
                                       {"quantized", req.quantized},
                                       {"data", req.data},
                                       {"calib", req.calibration},
                                       {"split", req.split},
                                       {"samples", req.samples},
                                       {"seed", req.seed},
                                       {"batch_size", req.batch_size}})
                           .dump();
    DivergenceReport r;
    projects::run_recorded(p.value("--project"), info, cli_sink, [&](JobSink& sink) {
        r = run_divergence(req, sink, cancel);
        report_divergence_metrics(sink, r);
        if (auto* recorder = dynamic_cast<projects::ProjectRunRecorder*>(&sink))
            recorder->append_layer_stats({projects::divergence_record(divergence_report_json(r).dump())});
    });
    cli_sink.finish_line();
    if (p.has("--json"))
        std::printf("%s\n", divergence_report_json(r).dump(2).c_str());
    else
        print_text(r);
    return 0;
}

}  // namespace

Command divergence_command() {
    return Command{"divergence", kUsage,
                   "where a quantized model's error comes from: per-block propagated / isolated error, KL per block, worst tokens",
                   run};
}

}  // namespace ql::cli
