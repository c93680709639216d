// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli whatif MODEL --recipe R --calib D [--kv-cache K] [--rotate R]: the what-if view's
// numbers without the GUI (docs/CLI.md "whatif", engine/api/whatif_api.h): the recipe without and
// with a KV-cache format / a rotation, on a small batch, without a full run.
#include <cmath>
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/api/whatif_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli whatif MODEL --recipe R --calib D [--kv-cache K] [--rotate hadamard|rht|none] [--eval-data E]\n"
    "    [--samples N] [--eval-samples N] [--seq-len T] [--seed S] [--json] [--device cpu|cuda|cuda:N]\n\n"
    "Quantizes MODEL twice with round-to-nearest weights and max calibration on N (default 16) calibration\n"
    "examples of D: R without its KV-cache and rotation sections ('before'), and R with --kv-cache / --rotate\n"
    "('after'; R's own sections where not given). Prints per tensor (every quantized layer's input, every\n"
    "attention's cached K and V) kurtosis, max|x|/RMS and the quantization SQNR before / after, per layer the\n"
    "output SQNR, and the output error against MODEL on N (default 32) examples of E (default: D's validation\n"
    "split): KL(FP || Q) for decoders, 1 - cosine of mean-pooled embeddings for encoders. --json: everything,\n"
    "histograms and grids included (docs/CLI.md).";

std::string num(double v, const char* fmt = "%.2f") {
    if (!std::isfinite(v)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

void print_text(const WhatIfReport& r) {
    std::printf("model      %s\nrecipe     %s\n", r.model_path.c_str(), r.recipe_name.c_str());
    std::printf("KV cache   %s -> %s\nrotation   %s -> %s\n", r.kv_cache_before.c_str(), r.kv_cache_after.c_str(),
                r.rotation_before.c_str(), r.rotation_after.c_str());
    for (const std::string& n : r.rotation_notes) std::printf("           %s\n", n.c_str());
    std::printf("\n%-44s %-10s %17s %17s %17s\n", "tensor", "kind", "kurtosis", "max/RMS", "SQNR dB");
    for (const WhatIfTensor& t : r.tensors)
        std::printf("%-44s %-10s %8s %8s %8s %8s %8s %8s\n", t.name.c_str(), t.kind.c_str(), num(t.kurtosis_before).c_str(),
                    num(t.kurtosis_after).c_str(), num(t.max_over_rms_before).c_str(), num(t.max_over_rms_after).c_str(),
                    num(t.sqnr_before).c_str(), num(t.sqnr_after).c_str());
    std::printf("\n%-44s %17s\n", "layer", "output SQNR dB");
    for (const WhatIfLayer& l : r.layers)
        std::printf("%-44s %8s %8s\n", l.layer.c_str(), num(l.sqnr_before).c_str(), num(l.sqnr_after).c_str());
    std::printf("\n%s on %lld examples   %s -> %s\n", r.output_metric == "kl" ? "KL(FP || Q)" : "1 - cosine",
                static_cast<long long>(r.eval_examples), num(r.output_before, "%.3e").c_str(), num(r.output_after, "%.3e").c_str());
    std::printf("weights    %.1f KiB -> %.1f KiB\n", r.weight_bytes_before / 1024.0, r.weight_bytes_after / 1024.0);
    if (r.has_kv_cache)
        std::printf("KV cache   %.1f -> %.1f B/token, %.2f -> %.2f MiB per 8k context\n", r.kv_memory_before.bytes_per_token,
                    r.kv_memory_after.bytes_per_token, r.kv_memory_before.bytes_8k() / 1048576.0,
                    r.kv_memory_after.bytes_8k() / 1048576.0);
    std::printf("seconds    %.2f\n", r.seconds);
}

int run(const std::vector<std::string>& args) {
    ArgParser p("whatif", {"--recipe", "--calib", "--kv-cache", "--rotate", "--eval-data", "--samples", "--eval-samples",
                           "--seq-len", "--seed", "--device"},
                {"--json"});
    p.parse(args);
    if (p.positional().size() != 1) throw UserError("whatif: expected one MODEL (an HF model folder or 'demo')");
    WhatIfRequest req;
    req.model = p.positional()[0];
    req.recipe = p.required("--recipe");
    req.calibration = p.required("--calib");
    req.kv_cache = p.value("--kv-cache").value_or("");
    req.rotate = p.value("--rotate").value_or("");
    req.eval_data = p.value("--eval-data").value_or("");
    req.samples = p.positive_integer("--samples");
    if (req.samples == 0) req.samples = 16;
    req.eval_samples = p.positive_integer("--eval-samples");
    if (req.eval_samples == 0) req.eval_samples = 32;
    req.sequence_length = p.positive_integer("--seq-len");
    req.seed = p.seed();
    req.device = device_option(p);
    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const WhatIfReport r = run_what_if(req, sink, cancel);
    sink.finish_line();
    if (p.has("--json"))
        std::printf("%s", what_if_report_json(r).c_str());
    else
        print_text(r);
    return 0;
}

}  // namespace

Command whatif_command() {
    return Command{"whatif", kUsage, "try a KV-cache format and a rotation on a small batch (before / after), without a full run",
                   run};
}

}  // namespace ql::cli
