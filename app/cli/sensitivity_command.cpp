// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli sensitivity MODEL --recipe R[,R2...] --calib D [--data E] [--bits B --out-recipe F]:
// per-layer sensitivity (loss change and KL when only that layer is quantized) and, with --bits,
// an automatic mixed-precision recipe under a bits-per-weight budget (docs/CLI.md).
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/core/errors.h"
#include "engine/api/sensitivity_api.h"
#include "engine/io/atomic_file.h"

namespace ql::cli {
namespace {

// NaN (a metric that does not apply: KL for an encoder, cosine loss for a language model) -> null.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
nlohmann::json finite_or_null(const std::vector<double>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (double x : v) a.push_back(finite_or_null(x));
    return a;
}

const char* kUsage =
    "quantlab-cli sensitivity MODEL --recipe R[,R2,...] --calib D [--data E] [--samples N] [--eval-samples N]\n"
    "    [--device cpu|cuda|cuda:N]\n"
    "    [--seed S] [--bits B --out-recipe F.json] [--json]\n\n"
    "Quantizes one layer at a time (every other layer in full precision) with each recipe and measures the\n"
    "loss change and KL(FP || quantized) on held-out data E (default: the validation split of D); for a sentence\n"
    "encoder the cosine loss 1 - cos(FP, quantized) of the sentence embeddings instead (D, E: one sentence per line).\n"
    "--bits B searches one recipe per layer (or none = BF16) minimising the summed KL with at most B bits per\n"
    "weight of those layers (scales included), writes it to F.json (use it with 'quantlab-cli ptq --recipe F.json')\n"
    "and measures the mixed model.";

int run(const std::vector<std::string>& args) {
    ArgParser p("sensitivity",
                {"--recipe", "--calib", "--data", "--samples", "--eval-samples", "--seed", "--bits", "--out-recipe", "--device"},
                {"--json"});
    p.parse(args);
    if (p.positional().size() != 1) throw UserError("sensitivity: expected one MODEL (an HF model folder or 'demo')");
    SensitivityRequest req;
    req.model = p.positional()[0];
    req.device = device_option(p);
    req.recipes = split_list(p.required("--recipe"));
    req.calibration = p.required("--calib");
    req.data = p.value("--data").value_or("");
    req.samples = p.integer("--samples", 0);
    req.eval_samples = p.integer("--eval-samples", 128);
    if (req.samples < 0 || req.eval_samples <= 0) throw UserError("sensitivity: sample counts must be positive");
    req.seed = p.seed();
    req.bits_budget = p.number("--bits", 0);
    if (p.has("--bits") && !(req.bits_budget > 0)) throw UserError("sensitivity: --bits must be a positive number");
    if (p.has("--bits") != p.has("--out-recipe")) throw UserError("sensitivity: --bits and --out-recipe go together");

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const SensitivityReport r = run_sensitivity(req, sink, cancel);
    sink.finish_line();
    if (p.has("--out-recipe")) write_file_atomically(*p.value("--out-recipe"), r.mixed_recipe_json);
    if (p.has("--json")) {
        nlohmann::json layers = nlohmann::json::array();
        for (const SensitivityRow& row : r.layers)
            layers.push_back({{"layer", row.layer}, {"parameters", row.parameters}, {"kl", finite_or_null(row.kl)},
                              {"loss_delta", finite_or_null(row.loss_delta)}, {"cosine_loss", finite_or_null(row.cosine_loss)},
                              {"weight_bits", row.weight_bits}, {"chosen", row.chosen}});
        nlohmann::json j = {{"recipes", r.recipes}, {"metric", r.metric}, {"fp_loss", finite_or_null(r.fp_loss)},
                            {"all_quantized_loss", finite_or_null(r.all_quantized_loss)},
                            {"all_quantized_kl", finite_or_null(r.all_quantized_kl)},
                            {"all_quantized_cosine_loss", finite_or_null(r.all_quantized_cosine_loss)},
                            {"bits_per_weight", r.bits_per_weight}, {"layers", layers}, {"seconds", r.seconds}};
        if (req.bits_budget > 0)
            j["mixed"] = {{"bits_per_weight", r.mixed_bits_per_weight}, {"predicted_kl", r.mixed_predicted_kl},
                          {"loss", finite_or_null(r.mixed_loss)}, {"kl", finite_or_null(r.mixed_kl)},
                          {"cosine_loss", finite_or_null(r.mixed_cosine_loss)}, {"recipe", *p.value("--out-recipe")}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    const bool encoder = r.metric == "cosine_loss";
    if (encoder) std::printf("sentence encoder: cost = cosine loss 1 - cos(FP, quantized) of the embeddings\n\n%-40s", "layer");
    else std::printf("FP loss %.5f\n\n%-40s", r.fp_loss, "layer");
    for (const std::string& n : r.recipes) std::printf(" %18s", (n + (encoder ? " 1-cos" : " KL")).c_str());
    if (req.bits_budget > 0) std::printf("  chosen");
    std::printf("\n");
    for (const SensitivityRow& row : r.layers) {
        std::printf("%-40s", row.layer.c_str());
        for (double v : encoder ? row.cosine_loss : row.kl) std::printf(" %18.3e", v);
        if (req.bits_budget > 0) std::printf("  %s", row.chosen.c_str());
        std::printf("\n");
    }
    if (encoder) {
        std::printf("\n%-40s", "all layers quantized: 1 - cos");
        for (double v : r.all_quantized_cosine_loss) std::printf(" %18.3e", v);
    } else {
        std::printf("\n%-40s", "all layers quantized: loss");
        for (double v : r.all_quantized_loss) std::printf(" %18.5f", v);
        std::printf("\n%-40s", "all layers quantized: KL");
        for (double v : r.all_quantized_kl) std::printf(" %18.3e", v);
    }
    std::printf("\n%-40s", "bits per weight");
    for (double v : r.bits_per_weight) std::printf(" %18.3f", v);
    std::printf("\n");
    if (req.bits_budget > 0 && encoder)
        std::printf("\nmixed precision: %.3f bits per weight, predicted 1 - cos %.3e, measured %.3e -> %s\n",
                    r.mixed_bits_per_weight, r.mixed_predicted_kl, r.mixed_cosine_loss, p.value("--out-recipe")->c_str());
    else if (req.bits_budget > 0)
        std::printf("\nmixed precision: %.3f bits per weight, predicted KL %.3e, measured KL %.3e, loss %.5f -> %s\n",
                    r.mixed_bits_per_weight, r.mixed_predicted_kl, r.mixed_kl, r.mixed_loss, p.value("--out-recipe")->c_str());
    std::printf("seconds %.2f\n", r.seconds);
    return 0;
}

}  // namespace

Command sensitivity_command() {
    return Command{"sensitivity", kUsage, "per-layer quantization sensitivity; automatic mixed precision under a bit budget",
                   run};
}

}  // namespace ql::cli
