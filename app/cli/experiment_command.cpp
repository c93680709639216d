// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli experiment run|show|templates|template: experiments as data (docs/EXPERIMENTS.md,
// docs/CLI.md "experiment"). `run` makes every cell × replicate of an experiment as an ordinary
// run of the project, skips those already done (resumable), shares the grid with other
// processes through claims in the project file, and stops after the current run on Ctrl-C.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/child_process.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/api/evalsuite_api.h"
#include "engine/api/experiment_api.h"
#include "engine/api/ptq_api.h"
#include "engine/core/errors.h"
#include "projects/experiment_grid.h"
#include "projects/experiment_report.h"
#include "projects/project_file.h"

namespace ql::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using projects::cells_outside_intervals;
using projects::ExperimentReport;
using projects::experiment_report_json;
using projects::experiment_report_text;
using projects::find_experiment;
using projects::load_experiment_report;

const char* kUsage =
    "quantlab-cli experiment run FILE|TEMPLATE --project P.qlab [--replicates N] [--model M] [--steps N]\n"
    "    [--eval-samples N] [--data D] [--eval-data E] [--pairs P] [--workers N] [--dry-run] [--json]\n"
    "    [--device cpu|cuda|cuda:N] [--suite FILE|default [--suite-categories C1,C2] [--suite-limit N]]\n"
    "quantlab-cli experiment show NAME|FILE|TEMPLATE --project P.qlab [--against OTHER.qlab] [--json]\n"
    "quantlab-cli experiment templates\n"
    "quantlab-cli experiment template NAME\n\n"
    "run: makes every cell x replicate of the experiment (a JSON file, docs/EXPERIMENTS.md, or a built-in\n"
    "template) as an ordinary run of the project (created when missing), then prints the result: per cell the\n"
    "mean and 95 % interval over replicates, per comparison the paired difference with its interval.\n"
    "Finished runs are not repeated (run it again to resume, or with more --replicates to add some). Ctrl-C\n"
    "stops after the current run (exit 130; a second Ctrl-C kills it, and its cell is redone next time).\n"
    "--workers N runs N processes that share the grid (any other 'experiment run' of the same experiment on\n"
    "this machine shares it too). --model / --steps / --eval-samples / --data / --pairs override the base run\n"
    "(--data: training, calibration and held-out data). With --model a sentence encoder (a BERT folder such as\n"
    "all-MiniLM-L6-v2) a template takes its encoder form on the sentences of --data: QAT trains the contrastive\n"
    "loss, runs are scored by embedding cosine to the FP model, the held-out contrastive loss (and spearman\n"
    "with --pairs) (docs/EXPERIMENTS.md \"Sentence encoders\"). With --model a language model (not the demo) and\n"
    "--data a text file or folder, a template takes its decoder form: fine-tuning budgets, runs scored by the\n"
    "held-out text's KL to the FP model, top-1 agreement and loss (docs/EXPERIMENTS.md \"Language models\").\n"
    "--eval-data E: every run is scored on E (its validation split) instead of --data's held-out tail.\n"
    "--suite S: every run's model also answers the eval suite S (greedy, docs/EVAL_SUITES.md) beside the FP\n"
    "model's answers (made once per experiment): success overall and per category, schema validity and the\n"
    "flips right->wrong / wrong->right become metrics (docs/EXPERIMENTS.md \"Answers\"); --suite-categories and\n"
    "--suite-limit select items as evalsuite's --categories and --limit do.\n"
    "--device D: where every run computes (docs/CLI.md \"Devices\"); recorded as the runs' parameter \"device\"\n"
    "(--device cpu is the experiment without the flag).\n"
    "Run folders: P.experiments/NAME-ID/CELL/rK beside the project.\n"
    "show: the result of an experiment of the project (by name: its latest), with the reproducibility\n"
    "manifest; --against OTHER.qlab lists the cells whose mean here lies outside OTHER's interval.";

projects::ProjectFile open_or_create(const std::string& path) {
    if (fs::exists(path)) return projects::ProjectFile::open(path, projects::OpenMode::ReadWrite);
    return projects::ProjectFile::create(path);
}

// Children for --workers: the same command line without --workers and --json, output dropped.
std::vector<pid_t> spawn_workers(int64_t count, const std::vector<std::string>& args) {
    std::vector<std::string> child_args = {"experiment"};
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--workers") {
            ++i;
            continue;
        }
        if (args[i] != "--json") child_args.push_back(args[i]);
    }
    std::vector<pid_t> pids;
    for (int64_t i = 1; i < count; ++i) {
        try {
            pids.push_back(spawn_self(child_args));
        } catch (const UserError&) {
            // as before: a worker that cannot start leaves its share to the others
        }
    }
    return pids;
}

int run_experiment(const std::vector<std::string>& args) {
    ArgParser p("experiment run",
                {"--project", "--replicates", "--model", "--steps", "--eval-samples", "--data", "--eval-data", "--pairs", "--workers",
                 "--device", "--suite", "--suite-categories", "--suite-limit"},
                {"--json", "--dry-run"});
    p.parse(std::vector<std::string>(args.begin() + 1, args.end()));
    if (p.positional().size() != 1) throw UserError("experiment run: expected one FILE or TEMPLATE (see quantlab-cli experiment templates)");
    const std::string project = p.required("--project");
    experiments::ExperimentOverrides o;
    o.replicates = p.positive_integer("--replicates");
    o.model = p.value("--model").value_or("");
    o.steps = p.positive_integer("--steps");
    o.eval_samples = p.positive_integer("--eval-samples");
    o.data = p.value("--data").value_or("");
    o.pairs = p.value("--pairs").value_or("");
    o.eval_data = p.value("--eval-data").value_or("");
    if (p.has("--device")) o.device = device_option(p);
    o.suite = p.value("--suite").value_or("");
    o.suite_categories = p.value("--suite-categories").value_or("");
    o.suite_limit = p.positive_integer("--suite-limit");
    if (o.suite.empty() && (p.has("--suite-categories") || p.has("--suite-limit")))
        throw UserError("experiment run: --suite-categories and --suite-limit select items of --suite, which is missing");
    if (!o.suite.empty()) {
        // One metric per category the runs answer (a category the suite lacks is named by
        // check_experiment_models).
        const std::vector<std::string> listed = split_list(o.suite_categories);
        const std::set<std::string> chosen(listed.begin(), listed.end());
        const SuiteOverview suite = describe_suite(o.suite);
        for (const auto& [category, items] : suite.categories)
            if (chosen.empty() || chosen.count(category)) {
                o.suite_metric_categories.push_back(category);
                o.suite_has_json = o.suite_has_json || suite.json_categories.count(category) > 0;
            }
    }
    o.encoder = !o.model.empty() && model_is_sentence_encoder(o.model);
    const int64_t workers = std::max<int64_t>(1, p.positive_integer("--workers"));
    const experiments::ExperimentSpec spec = experiments::load_experiment(p.positional()[0], o);
    check_experiment_models(spec);  // before anything is created
    check_experiment_recipes(spec);  // a recipe that misses its model fails here, not at its first run
    const std::vector<experiments::PlannedRun> plan = experiments::plan_runs(spec);

    if (p.has("--dry-run")) {
        std::fprintf(stderr, "experiment %s: %zu cells x %lld replicates = %zu runs planned\n", spec.name.c_str(),
                     spec.cells.size(), static_cast<long long>(spec.replicates), plan.size());
        for (const auto& r : plan) std::printf("%s #%lld seed %llu\n", r.cell->key.c_str(), static_cast<long long>(r.replicate),
                                               static_cast<unsigned long long>(r.seed));
        return 0;
    }
    projects::ProjectFile file = open_or_create(project);
    const std::string environment = experiments::environment_manifest_json();
    const int64_t experiment_id = projects::begin_experiment(file, spec, environment, args);
    const std::vector<pid_t> children = workers > 1 ? spawn_workers(workers, args) : std::vector<pid_t>{};

    CancellationToken stop;  // Ctrl-C: stop after the current run
    CancelOnSignal on_signal(stop);
    CliJobSink quiet(true);
    int64_t ran = 0;
    double seconds = 0;
    const projects::ExperimentGridCounts counts = projects::run_experiment_grid(
        file, project, experiment_id, spec, plan, environment, quiet, stop, [&](const projects::ExperimentGridEvent& e) {
            const experiments::PlannedRun& run = plan[e.index];
            if (e.kind == projects::ExperimentGridEvent::Kind::Started)
                std::fprintf(stderr, "experiment %s: run %zu/%zu %s #%lld ...\n", spec.name.c_str(), e.index + 1, plan.size(),
                             run.cell->key.c_str(), static_cast<long long>(run.replicate));
            if (e.kind != projects::ExperimentGridEvent::Kind::Finished) return;
            seconds += e.seconds;
            ++ran;
            const std::size_t left = plan.size() - e.index - 1;
            std::fprintf(stderr, "experiment %s: run %zu/%zu done in %s (run %lld); ETA %s for %zu left\n", spec.name.c_str(),
                         e.index + 1, plan.size(), format_duration(e.seconds).c_str(), static_cast<long long>(e.run_id),
                         format_duration(seconds / static_cast<double>(ran) * static_cast<double>(left) /
                                         static_cast<double>(workers))
                             .c_str(),
                         left);
        });
    const int64_t skipped = counts.skipped, taken = counts.taken;
    for (pid_t child : children) wait_child(child);
    const bool stopped = stop.cancelled();
    const ExperimentReport report = load_experiment_report(file, experiment_id);
    if (p.has("--json")) {
        json j = experiment_report_json(report);
        j["ran_now"] = ran;
        j["already_done"] = skipped;
        j["running_elsewhere"] = taken;
        j["stopped"] = stopped;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s", experiment_report_text(report).c_str());
        std::printf("\nran %lld now, %lld already done, %lld running elsewhere%s\n", static_cast<long long>(ran),
                    static_cast<long long>(skipped), static_cast<long long>(taken), stopped ? "; stopped (Ctrl-C)" : "");
    }
    if (stopped) {
        std::fprintf(stderr, "experiment: stopped after the current run; run the same command again to continue\n");
        return 130;
    }
    return 0;
}

int show_experiment(const std::vector<std::string>& args) {
    ArgParser p("experiment show",
                {"--project", "--against", "--replicates", "--model", "--steps", "--eval-samples", "--data", "--pairs"}, {"--json"});
    p.parse(std::vector<std::string>(args.begin() + 1, args.end()));
    if (p.positional().size() != 1) throw UserError("experiment show: expected one NAME, FILE or TEMPLATE");
    const std::string project = p.required("--project");
    const projects::ProjectFile file = projects::ProjectFile::open(project, projects::OpenMode::ReadOnly);
    const int64_t id = find_experiment(file, p.positional()[0]);
    const ExperimentReport report = load_experiment_report(file, id);
    json j = experiment_report_json(report);
    std::optional<json> moved;
    if (const auto against = p.value("--against")) {
        const projects::ProjectFile other = projects::ProjectFile::open(*against, projects::OpenMode::ReadOnly);
        moved = cells_outside_intervals(report, load_experiment_report(other, find_experiment(other, report.spec.name)));
        j["against"] = {{"project", *against}, {"moved", *moved}};
    }
    if (p.has("--json")) {
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%s", experiment_report_text(report).c_str());
    if (moved) {
        std::printf("\nagainst %s: %zu cell metric(s) moved outside the other's 95 %% interval\n", p.value("--against")->c_str(),
                    moved->size());
        for (const json& m : *moved)
            std::printf("  %s %s: %.6g here, other [%.6g, %.6g]\n", m["cell"].get<std::string>().c_str(),
                        m["metric"].get<std::string>().c_str(), m["mean"].get<double>(), m["other_ci_low"].get<double>(),
                        m["other_ci_high"].get<double>());
    }
    return 0;
}

int run(const std::vector<std::string>& args) {
    if (args.empty()) throw UserError("experiment: expected run, show, templates or template (quantlab-cli experiment --help)");
    if (args[0] == "run") return run_experiment(args);
    if (args[0] == "show") return show_experiment(args);
    if (args[0] == "templates") {
        for (const std::string& name : experiments::experiment_template_names()) {
            const experiments::ExperimentSpec s = experiments::load_experiment(name);
            std::printf("%-16s %zu runs  %s\n", name.c_str(), s.cells.size() * static_cast<std::size_t>(s.replicates),
                        s.title.c_str());
        }
        return 0;
    }
    if (args[0] == "template") {
        if (args.size() != 2) throw UserError("experiment template: expected one NAME (quantlab-cli experiment templates)");
        std::printf("%s\n", json::parse(experiments::experiment_template_json(args[1])).dump(2).c_str());
        return 0;
    }
    throw UserError("experiment: unknown subcommand '" + args[0] + "' (run, show, templates, template)");
}

}  // namespace

Command experiment_command() {
    return Command{"experiment", kUsage,
                   "experiments as data: grids with replicate seeds, means with 95 % intervals, paired differences", run};
}

}  // namespace ql::cli
