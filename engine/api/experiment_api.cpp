// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/experiment_api.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <cmath>
#include <system_error>

#include <nlohmann/json.hpp>

#include "engine/api/demo_api.h"
#include "engine/api/eval_api.h"
#include "engine/api/eval_json.h"
#include "engine/api/evalsuite_api.h"
#include "engine/api/model_api.h"
#include "engine/api/ptq_api.h"
#include "engine/api/sensitivity_api.h"
#include "engine/api/train_api.h"
#include "engine/core/errors.h"
#include "engine/core/qat_plan.h"
#include "engine/evaluation/evaluation_run.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/io/atomic_file.h"
#include "engine/io/gguf_file.h"
#include "engine/loading/gguf_model.h"
#include "engine/loading/gguf_model_config.h"
#include "engine/models/model_device.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void put(std::map<std::string, double>& out, const std::string& name, const std::optional<double>& v) {
    if (v) out[name] = *v;
}

// The metrics of one evaluation under the names experiments use (EXPERIMENTS.md "Metrics").
std::map<std::string, double> metrics_of(const EvalReport& r) {
    std::map<std::string, double> m;
    m["loss"] = r.overall.loss;
    put(m, "exact_match", r.overall.exact_match);
    put(m, "accuracy", r.overall.accuracy);
    put(m, "kl", r.overall.kl);
    put(m, "agreement", r.overall.agreement);
    for (const auto& [domain, dm] : r.domains) put(m, "exact_match/" + domain, dm.exact_match);
    // Sentence encoders: embedding cosine to the FP model, the pairs' Spearman (and the teacher's).
    put(m, "cosine_mean", r.overall.cosine_mean);
    put(m, "cosine_p5", r.overall.cosine_p5);
    put(m, "cosine_min", r.overall.cosine_min);
    put(m, "spearman", r.overall.spearman);
    put(m, "fp_spearman", r.overall.teacher_spearman);
    put(m, "contrastive_loss", r.overall.contrastive_loss);
    if (r.overall.cosine_mean) m.erase("loss");  // an encoder scored against its teacher has no token loss
    return m;
}

// Where a run parameter is set, as errors name it: "grid.model[1]" or "base.model".
std::string experiment_field_of(const experiments::Cell& cell, const std::string& key) {
    const auto it = cell.values.find(key);
    if (it == cell.values.end()) return "base." + key;
    return "grid." + key + " (" + it->second + ")";
}

[[noreturn]] void experiment_field_error(const experiments::ExperimentSpec& spec, const std::string& field, const std::string& what) {
    throw UserError("experiment '" + spec.file + "': field '" + field + "' " + what);
}

// A menu entry as the recipe the search measures: the format names by their preset, BF16 none
// (the search may always keep a layer unquantized), anything else a preset or recipe file.
std::string menu_recipe(const std::string& entry) {
    if (entry == "NVFP4") return "NVFP4_DEFAULT";
    if (entry == "FP8") return "FP8_DEFAULT";
    if (entry == "BF16") return "";
    return entry;  // MXFP8, MXFP4, other presets, recipe files
}

// The sensitivity search's per-layer plan for a mixed run, named for its budget and menu.
std::pair<std::string, std::string> mixed_plan(const experiments::PlannedRun& run, JobSink& sink,
                                               const CancellationToken& cancel, json& search) {
    const experiments::RunParameters& p = run.cell->parameters;
    SensitivityRequest s;
    s.model = p.model;
    std::string menu;
    for (const std::string& entry : p.menu) {
        menu += (menu.empty() ? "" : "+") + entry;
        if (const std::string r = menu_recipe(entry); !r.empty()) s.recipes.push_back(r);
    }
    s.calibration = p.calib.empty() ? p.data : p.calib;
    s.samples = p.calib_samples;
    s.seed = run.seed;
    s.bits_per_parameter_budget = p.bits;
    s.device = p.device;
    s.measure_on_training_split = true;  // the run is scored on the validation split
    const SensitivityReport r = run_sensitivity(s, sink, cancel);
    json plan = json::parse(r.mixed_recipe_json);
    std::ostringstream name;
    name << "MIXED_" << p.bits << "B_" << menu;
    plan["name"] = name.str();
    std::ostringstream budget;
    budget << p.bits;
    plan["description"] = "per-layer plan of the sensitivity search over " + menu + " within " + budget.str() +
                          " bits per parameter (cost: " + r.metric + ")";
    std::map<std::string, int> chosen;
    for (const SensitivityRow& row : r.layers) ++chosen[row.chosen.empty() || row.chosen == "none" ? "BF16" : row.chosen];
    search = {{"menu", p.menu},
              {"budget_bits_per_parameter", p.bits},
              {"budget_bits_per_weight", r.mixed_bits_budget},
              {"bits_per_weight", r.mixed_bits_per_weight},
              {"predicted_cost", r.mixed_predicted_kl},
              {"cost", r.metric},
              {"layers_per_choice", chosen}};
    return {name.str(), plan.dump(2)};
}

std::vector<std::string> split_categories(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string c; std::getline(in, c, ',');)
        if (!c.empty()) out.push_back(c);
    return out;
}

// The run's model (`quantized`: a PTQ or trained checkpoint) answers the suite beside the FP
// model's answers, which are made once per experiment and kept in shared_dir: the same model,
// suite bytes and selection give the same file (greedy answers are deterministic), so replicates
// and cells pair with one baseline.
void add_suite_metrics(const experiments::RunParameters& p, const std::string& quantized, const std::string& label,
                       const std::string& run_dir, const std::string& shared_dir, JobSink& sink, const CancellationToken& cancel,
                       ExperimentRunOutput& out) {
    EvalSuiteRequest req;
    req.suite = p.suite;
    req.categories = split_categories(p.suite_categories);
    req.limit = p.suite_limit;
    req.device = p.device;
    const std::string key = experiments::sha256_hex(p.model + '\n' + describe_suite(p.suite).sha256 + '\n' + p.suite_categories +
                                                    '\n' + std::to_string(p.suite_limit) + '\n' + std::to_string(req.max_tokens));
    const std::string baseline = (fs::path(shared_dir) / ("suite-fp-" + key.substr(0, 16) + ".json")).string();
    std::error_code ec;
    if (!fs::is_regular_file(baseline, ec)) {
        fs::create_directories(shared_dir, ec);
        if (ec) throw UserError("experiment: cannot create the folder " + shared_dir + ": " + ec.message());
        EvalSuiteRequest fp = req;
        fp.models = {p.model};
        fp.labels = {"fp"};
        const EvalSuiteResult r = run_evalsuite(fp, sink, cancel);
        evaluation::save_evaluation_run(r.runs[0], baseline);
    }
    req.models = {baseline, quantized};
    req.labels = {"fp", label};
    const EvalSuiteResult r = run_evalsuite(req, sink, cancel);
    evaluation::save_evaluation_run(r.runs[1], run_dir + "/evalsuite.json");
    for (const auto& [name, value] : evaluation_run_metrics(r, 1)) out.result.metrics[name] = value;
    json report = json::parse(out.report_json);
    report["evalsuite"] = {{"baseline", baseline}, {"answers", run_dir + "/evalsuite.json"}};
    out.report_json = report.dump();
}

}  // namespace

bool model_is_sentence_encoder(const std::string& model) {
    if (model == "demo") return false;
    if (is_gguf_file(model)) return gguf_model_config(GgufFile::open(model)).architecture == "bert";  // metadata only (mapped)
    std::ifstream in(model + "/config.json");
    if (!in) return false;
    const json j = json::parse(in, nullptr, false);
    return j.is_object() && j.value("model_type", "") == "bert";
}

void check_experiment_models(const experiments::ExperimentSpec& spec) {
    std::map<std::string, bool> encoder;  // model -> is a sentence encoder (read once)
    // A device this build or machine lacks (base.device, --device) is refused before any run.
    for (const experiments::Cell& cell : spec.cells) torch_device(cell.parameters.device);
    for (const experiments::Cell& cell : spec.cells) {
        const experiments::RunParameters& p = cell.parameters;
        if (!encoder.count(p.model)) encoder[p.model] = model_is_sentence_encoder(p.model);
        const bool is_encoder = encoder[p.model];
        const std::string model_field = experiment_field_of(cell, "model");
        const std::string what = is_encoder ? "the sentence encoder " + p.model : "the token model " + p.model;
        // Named before the metrics the suite adds, which an encoder does not report either.
        if (is_encoder && !p.suite.empty())
            experiment_field_error(spec, experiment_field_of(cell, "suite"), "gives an eval suite to " + what + " (" + model_field +
                                                         "): suites are answered by language models");
        for (std::size_t i = 0; i < spec.metrics.size(); ++i) {
            const std::string& m = spec.metrics[i];
            const std::string field = "metrics[" + std::to_string(i) + "]";
            if (is_encoder && experiments::is_token_model_metric(m))
                experiment_field_error(spec, field, "asks " + m + " of " + what + " (" + model_field +
                                     "), which reports cosine_mean, cosine_p5, cosine_min, bits_per_parameter and, with "
                                     "a pairs file, spearman and fp_spearman");
            if (!is_encoder && experiments::is_encoder_metric(m))
                experiment_field_error(spec, field, "asks " + m + " of " + what + " (" + model_field +
                                     "): embedding metrics are those of sentence encoders (a BERT folder)");
            if (is_encoder && (m == "spearman" || m == "fp_spearman") && p.pairs.empty())
                experiment_field_error(spec, field, "asks " + m + " of cell " + cell.key + ", which has no pairs file (the run parameter pairs)");
        }
        for (std::size_t i = 0; i < spec.metrics.size(); ++i)
            if (spec.metrics[i].rfind("evalsuite/", 0) == 0 && p.suite.empty())
                experiment_field_error(spec, "metrics[" + std::to_string(i) + "]", "asks " + spec.metrics[i] + " of cell " + cell.key +
                                                                      ", which answers no eval suite (the run parameter suite)");
        if (!p.suite.empty()) {
            // The suite reads, its categories exist and the selection is not empty: before any run.
            const SuiteOverview suite = describe_suite(p.suite);
            for (const std::string& c : split_categories(p.suite_categories))
                if (std::none_of(suite.categories.begin(), suite.categories.end(), [&](const auto& known) { return known.first == c; }))
                    experiment_field_error(spec, experiment_field_of(cell, "suite_categories"),
                                           "names the category '" + c + "', which " + suite.path + " does not have");
        }
        if (!is_encoder && !p.pairs.empty())
            experiment_field_error(spec, experiment_field_of(cell, "pairs"), "gives a pairs file to " + what + " (" + model_field +
                                                         "): pairs are scored by sentence encoders only");
        if (is_encoder)
            for (const char* key : {"data", "calib", "eval_data"}) {
                const std::string v = key == std::string("data") ? p.data : key == std::string("calib") ? p.calib : p.eval_data;
                // Random sentences are training data an encoder takes (the data-robustness study);
                // it still calibrates on and is scored by real sentences.
                const bool trains_on_it = key == std::string("data") && p.method != "ptq" && p.method != "mixed" &&
                                          !p.calib.empty() && !p.eval_data.empty();
                if (trains_on_it && v == "synthetic:random-tokens") continue;
                if (is_synthetic_spec(v))
                    experiment_field_error(spec, experiment_field_of(cell, key), "gives " + v + " to " + what + " (" + model_field +
                                                             "), which reads sentences (a text file, one per line)");
            }
    }
}

void check_experiment_recipes(const experiments::ExperimentSpec& spec) {
    // What each cell applies to its model: (field, recipe) pairs in the order errors name them.
    struct Use {
        const experiments::Cell* cell;
        std::string field;
        RecipeToCheck recipe;
    };
    std::vector<Use> uses;
    for (const experiments::Cell& cell : spec.cells) {
        const experiments::RunParameters& p = cell.parameters;
        if (p.method == "mixed") {
            for (std::size_t i = 0; i < p.menu.size(); ++i)
                if (const std::string r = menu_recipe(p.menu[i]); !r.empty())
                    uses.push_back({&cell, experiment_field_of(cell, "menu") + " entry " + p.menu[i], {r, ""}});
        } else {
            uses.push_back({&cell, experiment_field_of(cell, "recipe"), {p.recipe, p.recipe_json}});
        }
    }
    // One load per model, each distinct recipe checked once.
    std::map<std::string, std::vector<RecipeToCheck>> per_model;
    std::map<std::pair<std::string, std::string>, std::size_t> index;  // (model, recipe name + json) -> position
    for (const Use& u : uses) {
        const std::string& model = u.cell->parameters.model;
        const auto key = std::make_pair(model, u.recipe.name + '\n' + u.recipe.json);
        if (index.count(key)) continue;
        index[key] = per_model[model].size();
        per_model[model].push_back(u.recipe);
    }
    std::map<std::string, std::vector<std::string>> misfits;
    for (const auto& [model, recipes] : per_model) misfits[model] = recipe_misfits(model, recipes);
    for (const Use& u : uses) {
        const std::string& model = u.cell->parameters.model;
        const std::string& why = misfits[model][index[{model, u.recipe.name + '\n' + u.recipe.json}]];
        if (!why.empty())
            throw UserError("experiment '" + spec.file + "': cell " + u.cell->key + ": recipe " + u.recipe.name + " (" + u.field +
                            ") does not fit the model " + model + ": " + why);
    }
}

ExperimentRunOutput run_experiment_run(const experiments::PlannedRun& run, const std::string& run_dir, const std::string& shared_dir,
                                       JobSink& sink, const CancellationToken& cancel) {
    const experiments::RunParameters& p = run.cell->parameters;
    std::error_code ec;
    fs::remove_all(run_dir, ec);
    fs::create_directories(run_dir, ec);
    if (ec) throw UserError("experiment: cannot create the run folder " + run_dir + ": " + ec.message());
    std::string recipe = p.recipe;
    if (!p.recipe_json.empty()) {
        recipe = run_dir + "/recipe.json";
        write_file_atomically(recipe, p.recipe_json);
    }
    ExperimentRunOutput out;
    out.result.cell = run.cell->key;
    out.result.replicate = run.replicate;
    json search;
    if (p.method == "mixed") {
        std::tie(out.plan_name, out.plan_json) = mixed_plan(run, sink, cancel, search);
        recipe = run_dir + "/plan.json";
        write_file_atomically(recipe, out.plan_json);
    }
    if (p.method == "ptq" || p.method == "mixed") {
        PtqRequest q;
        q.model = p.model;
        q.recipe = recipe;
        q.calibration = p.calib.empty() ? p.data : p.calib;
        q.out_dir = run_dir + "/model";
        q.force = true;
        q.samples = p.calib_samples;
        q.batch_size = p.batch_size > 0 ? p.batch_size : 0;
        q.seed = run.seed;
        q.device = p.device;
        const PtqSummary s = run_ptq(q, sink, cancel);
        EvalRequest e;
        e.model = q.out_dir;
        e.teacher = p.model;
        e.data = p.eval_data.empty() ? p.data : p.eval_data;
        e.split = p.eval_split;
        e.samples = p.eval_samples;
        e.seed = run.seed;
        e.pairs = p.pairs;
        e.device = p.device;
        const EvalReport r = run_eval(e, sink, cancel);
        report_eval_metrics(sink, 0, r);
        out.result.metrics = metrics_of(r);
        out.result.metrics["bits_per_parameter"] = s.bits_per_parameter;
        out.result.examples = r.overall.examples;
        json report = {{"ptq", json::parse(ptq_report_json(s))}, {"eval", eval_report_json(r)}};
        if (!search.is_null()) report["search"] = search;
        out.report_json = report.dump();
        if (!p.suite.empty()) add_suite_metrics(p, q.out_dir, run.cell->key, run_dir, shared_dir, sink, cancel, out);
        return out;
    }
    TrainRequest t;
    t.mode = p.method == "fp-then-qat" ? "qat" : p.method;
    t.model = p.model;
    std::optional<DemoReport> from_scratch;
    // A pretrained model (an encoder, a language model: anything but the demo) is not trained
    // from scratch: its budget is fine-tuning steps, the first (1 − f) in full precision and the
    // rest QAT, on the one schedule of the run (docs/EXPERIMENTS.md "Sentence encoders",
    // "Language models").
    const bool fine_tune = p.method == "fp-then-qat" && p.model != "demo";
    if (fine_tune) {
        const auto qat_steps = static_cast<int64_t>(std::llround(p.qat_fraction * static_cast<double>(p.total_steps)));
        if (qat_steps < 1 || qat_steps >= p.total_steps)
            throw UserError("experiment: fp-then-qat needs total_steps with at least one FP and one QAT step (total_steps " +
                            std::to_string(p.total_steps) + ", qat_fraction " + std::to_string(p.qat_fraction) + ")");
        t.steps = p.total_steps;
    } else if (p.method == "fp-then-qat") {
        // The classic split of scripts/qat-results "sweep": a fresh demo trained in full precision
        // for the first (1 − f) of the budget (its own schedule), then QAT for the rest.
        const auto qat_steps = static_cast<int64_t>(std::llround(p.qat_fraction * static_cast<double>(p.total_steps)));
        const int64_t fp_steps = p.total_steps - qat_steps;
        if (qat_steps < 1 || fp_steps < 1)
            throw UserError("experiment: fp-then-qat needs total_steps with at least one FP and one QAT step (total_steps " +
                            std::to_string(p.total_steps) + ", qat_fraction " + std::to_string(p.qat_fraction) + ")");
        DemoRequest d;
        d.out_dir = run_dir + "/fp";
        d.force = true;
        d.steps = fp_steps;
        d.seed = run.seed;
        d.device = p.device;
        from_scratch = build_demo(d, sink, cancel);
        t.model = d.out_dir;
        t.steps = qat_steps;
    }
    t.recipe = recipe;
    t.data = p.data;
    t.eval_data = p.eval_data;
    t.eval_split = p.eval_split;
    t.eval_pairs = p.pairs;
    t.calibration = p.calib;
    t.out_dir = run_dir + "/train";
    t.force = true;
    if (!from_scratch && !fine_tune) t.steps = p.steps;
    t.batch_size = p.batch_size;
    t.eval_samples = p.eval_samples;
    t.calibration_samples = p.calib_samples;
    t.fp_steps = fine_tune ? p.total_steps - static_cast<int64_t>(std::llround(p.qat_fraction * static_cast<double>(p.total_steps)))
                         : p.fp_steps;
    t.warmup_steps = p.warmup_steps;
    t.lr = p.lr;
    t.temperature = p.temperature;
    t.ce_weight = p.ce_weight;
    t.schedule = p.schedule;
    t.seed = run.seed;
    t.device = p.device;
    const TrainReport r = run_training(t, sink, cancel);
    out.result.metrics = metrics_of(r.after);
    out.result.examples = r.after.overall.examples;
    out.report_json = train_report_json(r);
    if (fine_tune) {
        // The planner's f for this budget: D = the tokens the run's steps read (an encoder's:
        // both views of each sentence), N the model's parameters.
        QatPlanInput in;
        in.parameters = r.parameters;
        in.bits = static_cast<int>(p.qat_bits);
        in.total_tokens = static_cast<double>(std::max<int64_t>(r.tokens, 1));
        const QatPlan plan = plan_qat(in);
        out.result.metrics["planner_qat_fraction"] = plan.optimal_qat_fraction;
        out.result.metrics["tokens_per_parameter_byte"] = plan.tokens_per_parameter_byte;
    }
    if (from_scratch) {
        out.result.metrics["fp_exact_match"] = from_scratch->exact_match;
        // The planner's f for this budget: D = total_steps · batch · 13 tokens per synthetic problem
        // (docs/RESULTS.md "The QAT planner against a measured sweep"), N the demo's parameters.
        QatPlanInput in;
        in.parameters = from_scratch->parameter_count;
        in.bits = static_cast<int>(p.qat_bits);
        in.total_tokens = static_cast<double>(p.total_steps) * static_cast<double>(from_scratch->batch_size) * 13.0;
        const QatPlan plan = plan_qat(in);
        out.result.metrics["planner_qat_fraction"] = plan.optimal_qat_fraction;
        out.result.metrics["tokens_per_parameter_byte"] = plan.tokens_per_parameter_byte;
        out.report_json = json({{"fp", {{"steps", from_scratch->steps}, {"exact_match", from_scratch->exact_match}}},
                                {"train", json::parse(out.report_json)}})
                              .dump();
    }
    if (!p.suite.empty()) add_suite_metrics(p, r.out_model, run.cell->key, run_dir, shared_dir, sink, cancel, out);
    return out;
}

}  // namespace ql
