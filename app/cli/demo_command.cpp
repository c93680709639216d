// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli demo [--out DIR] [--force] [--json]: trains (or finds cached) the built-in demo
// model (docs/CLI.md "demo", docs/DATA.md "The demo model").
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "engine/api/demo_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli demo [--out DIR] [--force] [--json]\n\n"
    "Trains the demo decoder (a 1.2 M-parameter Llama) on the synthetic arithmetic tasks (+, -, *) and\n"
    "saves it as an HF folder (config.json, model.safetensors, quantlab.json) in DIR, by default\n"
    "$XDG_CACHE_HOME/quantlab/demo (~/.cache/quantlab/demo), where 'demo' as a MODEL argument finds it.\n"
    "A complete model already there is reused unless --force. Takes a few minutes on two cores;\n"
    "Ctrl-C cancels and keeps any previous model.";

int run(const std::vector<std::string>& args) {
    // --steps, --seed and --threads are for tests and measurements (not in the usage text).
    ArgParser p("demo", {"--out", "--steps", "--seed", "--threads"}, {"--force", "--json"});
    p.parse(args);
    if (!p.positional().empty()) throw UserError("demo: unexpected argument '" + p.positional()[0] + "'");
    DemoRequest req;
    req.out_dir = p.value("--out").value_or("");
    req.force = p.has("--force");
    req.steps = p.positive_integer("--steps");
    req.seed = p.seed();
    const int64_t threads = p.integer("--threads", 0);
    if (threads < 0 || threads > 1024 || (p.has("--threads") && threads == 0))
        throw UserError("demo: --threads must be a positive integer");
    req.threads = static_cast<int>(threads);

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const DemoReport r = build_demo(req, sink, cancel);
    sink.finish_line();
    if (p.has("--json")) {
        nlohmann::json domains = nlohmann::json::object();
        for (const auto& [name, v] : r.domain_exact_match) domains[name] = {{"exact_match", v}};
        const nlohmann::json j = {{"path", r.out_dir},
                                  {"cached", r.cached},
                                  {"steps", r.steps},
                                  {"batch_size", r.batch_size},
                                  {"threads", r.threads},
                                  {"train_seconds", r.train_seconds},
                                  {"seconds", r.cached ? nlohmann::json(nullptr) : nlohmann::json(r.seconds)},
                                  {"parameter_count", r.parameter_count},
                                  {"exact_match", r.exact_match},
                                  {"validation_examples", r.validation_examples},
                                  {"domains", domains}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("demo model   %s%s\n", r.out_dir.c_str(), r.cached ? " (cached; --force retrains)" : "");
    std::printf("parameters   %lld\n", static_cast<long long>(r.parameter_count));
    std::printf("training     %lld steps of %lld problems, %.1f s on %d thread(s)\n", static_cast<long long>(r.steps),
                static_cast<long long>(r.batch_size), r.train_seconds, r.threads);
    std::printf("held-out exact match  %.2f %% (%lld problems):", 100.0 * r.exact_match,
                static_cast<long long>(r.validation_examples));
    for (const auto& [name, v] : r.domain_exact_match) std::printf("  %s %.2f %%", name.c_str(), 100.0 * v);
    std::printf("\n");
    return 0;
}

}  // namespace

Command demo_command() { return Command{"demo", kUsage, "train (or find cached) the built-in demo model", run}; }

}  // namespace ql::cli
