// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli imatrix MODEL --calib D --out F: an importance matrix as llama-imatrix makes it;
// also merges files (--in-file, repeatable) and prints a file's statistics (--show F)
// (docs/CLI.md "imatrix").
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/api/imatrix_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli imatrix MODEL --calib D --out F [--format gguf|dat] [--samples N] [--seq-len T]\n"
    "    [--batch-size B] [--seed S] [--dtype uint16|uint32] [--process-output] [--in-file F0 ...] [--force] [--json]\n"
    "    [--device cpu|cuda|cuda:N]\n"
    "quantlab-cli imatrix --in-file F1 --in-file F2 ... --out F     merge importance matrices\n"
    "quantlab-cli imatrix --show F [--top K] [--json]                 statistics of an importance matrix\n\n"
    "MODEL: an HF model folder, a GGUF file, a QuantLab checkpoint or 'demo'. D: calibration data (docs/DATA.md);\n"
    "each sequence of --seq-len tokens is one chunk. For every Linear layer the sum of x^2 of its inputs per input\n"
    "column and the token count are collected, as llama.cpp's llama-imatrix does (batches of fewer than 16 rows are\n"
    "skipped, output.weight only with --process-output). F is written in llama.cpp's GGUF imatrix format (default) or\n"
    "its legacy .dat format; llama-quantize --imatrix and 'quantlab-cli export --as gguf --imatrix' read both.\n"
    "--show prints per tensor the statistics of llama-imatrix --show-statistics (sum, min, max, mean, std of the mean\n"
    "squared activations, % active, entropy, ZD, cosine to the previous layer) plus kurtosis and the top columns.";

nlohmann::json statistics_json(const ImportanceStatistics& s) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [col, v] : s.top) top.push_back({{"column", col}, {"value", v}});
    return {{"name", s.name},         {"layer", s.layer},     {"tensor", s.tensor},   {"elements", s.elements},
            {"tokens", s.tokens},     {"sum", s.total},       {"min", s.min},         {"max", s.max},
            {"mean", s.mean},         {"std", s.std},         {"kurtosis", s.kurtosis}, {"active", s.active},
            {"entropy", s.entropy},   {"entropy_normalized", s.entropy_normalized}, {"zd", s.zd},
            {"cossim", s.cossim},     {"top", top}};
}

void print_report(const ImatrixReport& r, bool json) {
    if (json) {
        nlohmann::json stats = nlohmann::json::array();
        for (const auto& s : r.statistics) stats.push_back(statistics_json(s));
        const nlohmann::json j = {{"out", r.out.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.out)},
                                  {"format", r.format},
                                  {"entries", r.entries},
                                  {"chunk_count", r.chunk_count},
                                  {"chunk_size", r.chunk_size},
                                  {"datasets", r.datasets},
                                  {"seconds", r.seconds},
                                  {"statistics", stats}};
        std::printf("%s\n", j.dump(2).c_str());
        return;
    }
    if (!r.out.empty()) std::printf("imatrix      %s (%s)\n", r.out.c_str(), r.format.c_str());
    std::printf("entries      %lld, %lld chunks of %lld tokens\n", static_cast<long long>(r.entries),
                static_cast<long long>(r.chunk_count), static_cast<long long>(r.chunk_size));
    for (const auto& d : r.datasets) std::printf("dataset      %s\n", d.c_str());
    std::printf("\n%5s %-16s %12s %10s %12s %10s %10s %8s %8s %8s %6s %8s  %s\n", "layer", "tensor", "sum(act^2)", "min",
                "max", "mean", "std", "kurt", "active", "entropy", "ZD", "cossim", "top columns");
    for (const auto& s : r.statistics) {
        std::string top;
        for (size_t i = 0; i < s.top.size() && i < 4; ++i) top += (i ? " " : "") + std::to_string(s.top[i].first);
        std::printf("%5s %-16s %12.4g %10.4g %12.4g %10.4g %10.4g %8.2f %7.2f%% %8.3f %5.1f%% %8.4f  %s\n",
                    s.layer >= 0 ? std::to_string(s.layer).c_str() : "-", s.tensor.c_str(), s.total, s.min, s.max, s.mean,
                    s.std, s.kurtosis, 100.0 * s.active, s.entropy, 100.0 * s.zd, s.cossim, top.c_str());
    }
    std::printf("\nseconds      %.2f\n", r.seconds);
}

int run(const std::vector<std::string>& args) {
    ArgParser p("imatrix", {"--calib", "--out", "--format", "--samples", "--seq-len", "--batch-size", "--seed", "--dtype",
                            "--in-file", "--show", "--top", "--device"},
                {"--process-output", "--force", "--json"});
    p.parse(args);
    if (p.positional().size() > 1) throw UserError("imatrix: unexpected argument '" + p.positional()[1] + "'");
    const int top = static_cast<int>(p.integer("--top", 8));
    if (top < 0) throw UserError("imatrix: --top must not be negative");
    if (p.has("--show")) {
        if (!p.positional().empty() || p.has("--calib") || p.has("--out") || p.has("--in-file"))
            throw UserError("imatrix: --show F takes no MODEL, --calib, --in-file or --out");
        print_report(imatrix_file_statistics(*p.value("--show"), top), p.has("--json"));
        return 0;
    }
    ImatrixRequest req;
    if (!p.positional().empty()) req.model = p.positional()[0];
    req.calibration = p.value("--calib").value_or("");
    req.out = p.required("--out");
    req.format = p.value("--format").value_or("gguf");
    req.samples = p.positive_integer("--samples");
    req.sequence_length = p.positive_integer("--seq-len");
    req.batch_size = p.positive_integer("--batch-size");
    req.seed = p.seed();
    req.token_dtype = p.value("--dtype").value_or("");
    req.process_output = p.has("--process-output");
    req.in_files = p.values("--in-file");
    req.force = p.has("--force");
    req.top_k = top;
    req.device = device_option(p);
    if (req.model.empty() && p.has("--calib")) throw UserError("imatrix: --calib needs a MODEL");
    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const ImatrixReport r = run_imatrix(req, sink, cancel);
    sink.finish_line();
    print_report(r, p.has("--json"));
    return 0;
}

}  // namespace

Command imatrix_command() {
    return Command{"imatrix", kUsage, "collect, merge or show an importance matrix (llama.cpp imatrix, GGUF or .dat)", run};
}

}  // namespace ql::cli
