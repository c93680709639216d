// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli demo [--retrain] [--out DIR] [--json]: reports the shipped demo model, or trains a
// new one (docs/CLI.md "demo", docs/DATA.md "The demo model").
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/api/demo_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli demo [--json]\n"
    "quantlab-cli demo --retrain [--out DIR] [--json] [--device cpu|cuda|cuda:N]\n\n"
    "Without --retrain: describes the demo model that ships with QuantLab (resources/demo; a 1.2 M-parameter\n"
    "Llama trained on the synthetic arithmetic tasks +, -, *), which 'demo' as a MODEL argument opens, after\n"
    "checking its files against the sizes and SHA-256 hashes its quantlab.json records.\n"
    "--retrain trains a new one (10000 steps: 15 minutes to over an hour on two cores, by load) into DIR, by default\n"
    "$XDG_CACHE_HOME/quantlab/demo (~/.cache/quantlab/demo), replacing a model there; open it by its path.\n"
    "--out DIR without --retrain trains only when DIR holds no complete model. Ctrl-C cancels and keeps any\n"
    "previous model. --device D: where the training steps run (docs/CLI.md \"Devices\"); the model is evaluated\n"
    "and saved from the CPU.";

void print_text(const DemoReport& r) {
    const char* note = r.shipped ? " (shipped with QuantLab)" : r.cached ? " (already there; --retrain trains anew)" : "";
    std::printf("demo model   %s%s\n", r.out_dir.c_str(), note);
    std::printf("parameters   %lld\n", static_cast<long long>(r.parameter_count));
    std::printf("training     %lld steps of %lld problems, %.1f s on %d thread(s)\n", static_cast<long long>(r.steps),
                static_cast<long long>(r.batch_size), r.train_seconds, r.threads);
    if (!r.command.empty()) std::printf("command      %s\n", r.command.c_str());
    if (!r.trained_on.empty()) std::printf("trained on   %s\n", r.trained_on.c_str());
    std::printf("held-out exact match  %.2f %% (%lld problems):", 100.0 * r.exact_match,
                static_cast<long long>(r.validation_examples));
    for (const auto& [name, v] : r.domain_exact_match) std::printf("  %s %.2f %%", name.c_str(), 100.0 * v);
    std::printf("\n");
}

int run(const std::vector<std::string>& args) {
    // --steps, --seed and --threads are for tests and measurements (not in the usage text).
    // --force is the older spelling of --retrain.
    ArgParser p("demo", {"--out", "--steps", "--seed", "--threads", "--device"}, {"--retrain", "--force", "--json"});
    p.parse(args);
    if (!p.positional().empty()) throw UserError("demo: unexpected argument '" + p.positional()[0] + "'");
    const bool retrain = p.has("--retrain") || p.has("--force");
    const bool trains = retrain || p.has("--out");
    for (const char* option : {"--steps", "--seed", "--threads", "--device"})
        if (p.has(option) && !trains)
            throw UserError(std::string("demo: ") + option + " is for training a new model: add --retrain");
    DemoRequest req;
    req.out_dir = p.value("--out").value_or("");
    req.force = retrain;
    req.steps = p.positive_integer("--steps");
    req.seed = p.seed();
    req.device = device_option(p);
    const int64_t threads = p.integer("--threads", 0);
    if (threads < 0 || threads > 1024 || (p.has("--threads") && threads == 0))
        throw UserError("demo: --threads must be a positive integer");
    req.threads = static_cast<int>(threads);
    req.command = "quantlab-cli demo";
    for (const std::string& a : args) req.command += " " + a;

    DemoReport r;
    if (trains) {
        CancellationToken cancel;
        CancelOnSignal on_signal(cancel);
        CliJobSink sink;
        r = build_demo(req, sink, cancel);
        sink.finish_line();
    } else {
        r = shipped_demo_report();
    }
    if (p.has("--json")) {
        nlohmann::json domains = nlohmann::json::object();
        for (const auto& [name, v] : r.domain_exact_match) domains[name] = {{"exact_match", v}};
        const nlohmann::json j = {{"path", r.out_dir},
                                  {"shipped", r.shipped},
                                  {"cached", r.cached},
                                  {"steps", r.steps},
                                  {"batch_size", r.batch_size},
                                  {"threads", r.threads},
                                  {"train_seconds", r.train_seconds},
                                  {"seconds", r.cached ? nlohmann::json(nullptr) : nlohmann::json(r.seconds)},
                                  {"parameter_count", r.parameter_count},
                                  {"exact_match", r.exact_match},
                                  {"validation_examples", r.validation_examples},
                                  {"domains", domains},
                                  {"command", r.command},
                                  {"trained_on", r.trained_on}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    print_text(r);
    return 0;
}

}  // namespace

Command demo_command() { return Command{"demo", kUsage, "describe the shipped demo model, or --retrain one", run}; }

}  // namespace ql::cli
