// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/experiment_api.h"

#include <filesystem>
#include <map>
#include <optional>
#include <cmath>
#include <system_error>

#include <nlohmann/json.hpp>

#include "engine/api/demo_api.h"
#include "engine/api/eval_api.h"
#include "engine/api/eval_json.h"
#include "engine/api/ptq_api.h"
#include "engine/api/train_api.h"
#include "engine/core/errors.h"
#include "engine/core/qat_plan.h"
#include "engine/io/atomic_file.h"

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
    return m;
}

}  // namespace

ExperimentRunOutput run_experiment_run(const experiments::PlannedRun& run, const std::string& run_dir, JobSink& sink,
                                       const CancellationToken& cancel) {
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
    if (p.method == "ptq") {
        PtqRequest q;
        q.model = p.model;
        q.recipe = recipe;
        q.calibration = p.calib.empty() ? p.data : p.calib;
        q.out_dir = run_dir + "/model";
        q.force = true;
        q.samples = p.calib_samples;
        q.batch_size = p.batch_size > 0 ? p.batch_size : 0;
        q.seed = run.seed;
        const PtqSummary s = run_ptq(q, sink, cancel);
        EvalRequest e;
        e.model = q.out_dir;
        e.teacher = p.model;
        e.data = p.eval_data.empty() ? p.data : p.eval_data;
        e.split = "validation";
        e.samples = p.eval_samples;
        e.seed = run.seed;
        const EvalReport r = run_eval(e, sink, cancel);
        report_eval_metrics(sink, 0, r);
        out.result.metrics = metrics_of(r);
        out.result.metrics["bits_per_parameter"] = s.bits_per_parameter;
        out.result.examples = r.overall.examples;
        out.report_json = json({{"ptq", json::parse(ptq_report_json(s))}, {"eval", eval_report_json(r)}}).dump();
        return out;
    }
    TrainRequest t;
    t.mode = p.method == "fp-then-qat" ? "qat" : p.method;
    t.model = p.model;
    std::optional<DemoReport> from_scratch;
    if (p.method == "fp-then-qat") {
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
        from_scratch = build_demo(d, sink, cancel);
        t.model = d.out_dir;
        t.steps = qat_steps;
    }
    t.recipe = recipe;
    t.data = p.data;
    t.eval_data = p.eval_data;
    t.calibration = p.calib;
    t.out_dir = run_dir + "/train";
    t.force = true;
    if (!from_scratch) t.steps = p.steps;
    t.batch_size = p.batch_size;
    t.eval_samples = p.eval_samples;
    t.calibration_samples = p.calib_samples;
    t.fp_steps = p.fp_steps;
    t.warmup_steps = p.warmup_steps;
    t.lr = p.lr;
    t.temperature = p.temperature;
    t.ce_weight = p.ce_weight;
    t.schedule = p.schedule;
    t.seed = run.seed;
    const TrainReport r = run_training(t, sink, cancel);
    out.result.metrics = metrics_of(r.after);
    out.result.examples = r.after.overall.examples;
    out.report_json = train_report_json(r);
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
    return out;
}

}  // namespace ql
