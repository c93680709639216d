// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli plan --params N --bits B --tokens D [--json]: the compute-optimal QAT planner
// (engine/core/qat_plan.h; docs/CLI.md "plan").
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "engine/core/errors.h"
#include "engine/core/qat_plan.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli plan --params N --bits B --tokens D [--json]\n\n"
    "N: parameters, D: total training tokens (FP + QAT); both accept the suffixes K, M, B (or G) and T\n"
    "(1.2M, 1B, 100B, 1T) and plain or scientific numbers (1e9). B: the QAT bit width, 1..16.\n"
    "Prints the tokens-per-parameter-byte statistic S = D / (N * B / 8), the loss-optimal QAT fraction\n"
    "f = exp(-6.7297 / ln S) of Dremov et al. (arXiv 2509.22935) with its +-0.09 band, the proposed FP/QAT\n"
    "token split, the source and the caveats. --json prints them as one object.";

// "1.2M" -> 1.2e6. Suffixes K, M, B/G, T (case-insensitive), scale 1e3 .. 1e12.
double count_with_suffix(const std::string& option, const std::string& text) {
    const std::string bad = "plan: option " + option + " expects a positive number with an optional suffix K, M, B or T "
                            "(e.g. 1.2M, 100B), got '" + text + "'";
    if (text.empty()) throw UserError(bad);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) throw UserError(bad);
    const std::string suffix(end);
    double scale = 1.0;
    if (suffix.size() > 1) throw UserError(bad);
    if (suffix.size() == 1) {
        switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
            case 'K': scale = 1e3; break;
            case 'M': scale = 1e6; break;
            case 'B': case 'G': scale = 1e9; break;
            case 'T': scale = 1e12; break;
            default: throw UserError(bad);
        }
    }
    const double r = v * scale;
    if (!std::isfinite(r) || r <= 0.0) throw UserError(bad);
    return r;
}

// 71.92B-style counts (units = "KMBT") and 500MB-style sizes (units = "KMGT"), for the text report.
std::string human(double v, const char* units = "KMBT") {
    const std::string suffix[] = {"", std::string(1, units[0]), std::string(1, units[1]), std::string(1, units[2]),
                                  std::string(1, units[3])};
    int i = 0;
    while (i < 4 && std::fabs(v) >= 1000.0) {
        v /= 1000.0;
        ++i;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g%s", v, suffix[i].c_str());
    return buf;
}

int run(const std::vector<std::string>& args) {
    ArgParser p("plan", {"--params", "--bits", "--tokens"}, {"--json"});
    p.parse(args);
    if (!p.positional().empty()) throw UserError("plan: unexpected argument '" + p.positional()[0] + "'");
    QatPlanInput in;
    const double n = count_with_suffix("--params", p.required("--params"));
    if (n > 9.0e18) throw UserError("plan: option --params is too large, got '" + *p.value("--params") + "'");
    in.parameters = std::llround(n);
    if (in.parameters < 1) throw UserError("plan: option --params must be at least 1, got '" + *p.value("--params") + "'");
    p.required("--bits");
    const int64_t bits = p.integer("--bits", 0);
    if (bits < 1 || bits > 16) throw UserError("plan: option --bits must be in 1..16, got " + std::to_string(bits));
    in.bits = static_cast<int>(bits);
    in.total_tokens = count_with_suffix("--tokens", p.required("--tokens"));

    const QatPlan plan = plan_qat(in);
    if (p.has("--json")) {
        const nlohmann::json j = {{"parameters", in.parameters},
                                  {"bits", in.bits},
                                  {"total_tokens", in.total_tokens},
                                  {"tokens_per_parameter_byte", plan.tokens_per_parameter_byte},
                                  {"optimal_qat_fraction", plan.optimal_qat_fraction},
                                  {"fraction_low", plan.fraction_low},
                                  {"fraction_high", plan.fraction_high},
                                  {"qat_tokens", plan.qat_tokens},
                                  {"fp_tokens", plan.fp_tokens},
                                  {"source", plan.source},
                                  {"caveats", plan.caveats}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("model          %s parameters, %d-bit QAT (%sB of quantized weights)\n",
                human(static_cast<double>(in.parameters)).c_str(), in.bits,
                human(static_cast<double>(in.parameters) * in.bits / 8.0, "KMGT").c_str());
    std::printf("tokens         %s (FP + QAT)\n", human(in.total_tokens).c_str());
    std::printf("S              %.6g tokens per parameter byte\n", plan.tokens_per_parameter_byte);
    std::printf("QAT fraction   %.3f  (band %.3f - %.3f)\n", plan.optimal_qat_fraction, plan.fraction_low,
                plan.fraction_high);
    std::printf("split          FP %s tokens, then QAT %s tokens\n", human(plan.fp_tokens).c_str(),
                human(plan.qat_tokens).c_str());
    std::printf("\nsource: %s\n\ncaveats:\n", plan.source.c_str());
    for (const std::string& c : plan.caveats) std::printf("  - %s\n", c.c_str());
    return 0;
}

}  // namespace

Command plan_command() {
    return Command{"plan", kUsage, "QAT planner: the loss-optimal FP/QAT token split for a model, bit width and budget",
                   run};
}

}  // namespace ql::cli
