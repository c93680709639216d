// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/evalsuite_api.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "engine/api/eval_api.h"
#include "engine/core/demo_folder.h"
#include "engine/core/errors.h"
#include "engine/evaluation/eval_suite.h"
#include "engine/evaluation/lm_eval_export.h"
#include "engine/evaluation/suite_runner.h"
#include "engine/io/atomic_file.h"
#include "engine/loading/model_source.h"
#include "engine/lora/adapted_model.h"
#include "engine/models/model_device.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using evaluation::EvaluationRun;

bool evalsuite_is_saved_run(const std::string& model) {
    std::error_code ec;
    return model.size() > 5 && model.compare(model.size() - 5, 5, ".json") == 0 && fs::is_regular_file(model, ec);
}

// The items a request selects, in suite order.
std::vector<std::string> evalsuite_selection(const evaluation::EvalSuite& suite, const EvalSuiteRequest& req) {
    const std::set<std::string> ids(req.items.begin(), req.items.end());
    const std::set<std::string> categories(req.categories.begin(), req.categories.end());
    for (const std::string& id : req.items)
        if (!suite.find(id)) throw UserError("evalsuite: " + suite.source + " has no item '" + id + "'");
    const std::vector<std::string> known = suite.categories();
    for (const std::string& c : req.categories)
        if (std::find(known.begin(), known.end(), c) == known.end())
            throw UserError("evalsuite: " + suite.source + " has no category '" + c + "'");
    if (req.limit < 0) throw UserError("evalsuite: --limit must not be negative");
    std::vector<std::string> out;
    for (const evaluation::EvalItem& item : suite.items) {
        if (!ids.empty() && !ids.count(item.id)) continue;
        if (!categories.empty() && !categories.count(item.category)) continue;
        if (req.limit > 0 && static_cast<int64_t>(out.size()) >= req.limit) break;
        out.push_back(item.id);
    }
    if (out.empty()) throw UserError("evalsuite: the selection holds no item of " + suite.source);
    return out;
}

// The logit metrics of model `path` on the text, against `reference` ("" for the baseline itself).
evaluation::LogitMetrics evalsuite_logits(const EvalSuiteRequest& req, const std::string& path, const std::string& reference,
                                          const std::string& reference_label, JobSink& sink, const CancellationToken& cancel) {
    EvalRequest e;
    e.model = path;
    e.teacher = reference;
    e.data = req.text;
    e.windows = req.windows;
    e.sequence_length = req.text_window;
    e.samples = req.text_windows;
    e.device = req.device;
    const EvalReport r = run_eval(e, sink, cancel);
    evaluation::LogitMetrics l;
    l.text = req.text;
    l.windows = req.windows;
    l.window = req.text_window;
    l.max_windows = req.text_windows;
    l.tokens = r.overall.tokens;
    l.ppl = r.overall.ppl.value_or(0.0);
    l.seconds = r.seconds;
    if (!reference.empty()) {
        l.reference = reference_label;
        if (r.overall.token_divergence) {
            const TokenDivergenceSummary& t = *r.overall.token_divergence;
            l.ppl_reference = t.ppl_fp;
            l.delta_ppl = t.delta_ppl;
            l.kl_mean = t.kl_mean;
            l.kl_p99 = t.kl_p99;
            l.top1_agreement = t.same_top1;
        } else {
            l.kl_mean = r.overall.kl;
            l.top1_agreement = r.overall.agreement;
        }
    }
    return l;
}

}  // namespace

std::string default_suite_path() {
    return (fs::path(shipped_demo_dir()).parent_path() / "evalsuites" / "default.jsonl").string();
}

std::string resolve_suite_path(const std::string& suite) { return suite == "default" || suite.empty() ? default_suite_path() : suite; }

SuiteOverview describe_suite(const std::string& suite) {
    const evaluation::EvalSuite s = evaluation::load_eval_suite(resolve_suite_path(suite));
    SuiteOverview o;
    o.path = s.source;
    o.sha256 = s.sha256;
    o.items = static_cast<int64_t>(s.items.size());
    for (const std::string& c : s.categories()) {
        int64_t n = 0;
        for (const auto& item : s.items) n += item.category == c ? 1 : 0;
        o.categories.emplace_back(c, n);
    }
    for (const auto& item : s.items)
        if (std::holds_alternative<evaluation::JsonSchemaCheck>(item.check)) o.json_categories.insert(item.category);
    return o;
}

EvalSuiteResult run_evalsuite(const EvalSuiteRequest& req, JobSink& sink, const CancellationToken& cancel,
                              const EvalSuiteItemCallback& on_item) {
    if (req.models.empty()) throw UserError("evalsuite: no model given");
    if (req.labels.size() > req.models.size()) throw UserError("evalsuite: more labels than models");
    const evaluation::EvalSuite suite = evaluation::load_eval_suite(resolve_suite_path(req.suite));
    const std::vector<std::string> selection = evalsuite_selection(suite, req);
    if (!req.text.empty()) {
        std::error_code ec;
        if (!fs::exists(req.text, ec)) throw UserError("evalsuite: the text '" + req.text + "' does not exist");
        if (req.text_window < 2) throw UserError("evalsuite: the text window must be at least 2 tokens");
        if (req.text_windows < 0) throw UserError("evalsuite: the number of text windows must not be negative");
    }
    evaluation::SuiteRunSettings settings;
    settings.max_tokens = req.max_tokens;
    settings.sampling.temperature = req.temperature;
    settings.sampling.top_k = req.top_k;
    settings.sampling.top_p = req.top_p;
    settings.sampling.min_p = req.min_p;
    settings.sampling.repetition_penalty = req.repetition_penalty;
    settings.sampling.seed = req.seed;
    settings.samples = req.samples;
    settings.item_ids = selection;
    settings.device = req.device;
    settings.gpus = req.gpus;
    settings.estimate_context = req.estimate_context;
    settings.kv_contexts = req.kv_contexts;
    evaluation::validate_suite_run(settings, suite);
    const at::Device device = torch_device(req.device);

    // Saved runs first: a mismatch is found before any model runs.
    EvalSuiteResult result;
    result.runs.resize(req.models.size());
    result.loaded.assign(req.models.size(), false);
    int64_t to_run = 0;
    for (size_t i = 0; i < req.models.size(); ++i) {
        if (evalsuite_is_saved_run(req.models[i])) {
            result.runs[i] = evaluation::load_evaluation_run(req.models[i]);
            result.loaded[i] = true;
            if (i < req.labels.size() && !req.labels[i].empty()) result.runs[i].manifest.label = req.labels[i];
        } else {
            ++to_run;
        }
    }
    const int64_t per_model = static_cast<int64_t>(selection.size()) * req.samples;
    settings.progress_total = to_run * per_model;
    std::set<std::string> labels;
    int64_t offset = 0;
    for (size_t i = 0; i < req.models.size(); ++i) {
        if (result.loaded[i]) continue;
        cancel.throw_if_cancelled();
        OpenedModel m = open_model_or_lora_run(req.models[i], req.device, cancel);  // a LoRA run: base + adapter
        move_opened_model(m, device);
        evaluation::SuiteRunSettings s = settings;
        s.label = i < req.labels.size() ? req.labels[i] : "";
        s.progress_offset = offset;
        result.runs[i] = evaluation::run_suite(m, req.models[i], suite, s, sink, cancel, [&](int64_t r, const evaluation::ItemOutcome& o) {
            if (on_item) on_item(i, r, o);
        });
        offset += per_model;
    }
    // Labels must tell runs apart: a second "fp" becomes "fp (2)".
    for (EvaluationRun& r : result.runs) {
        std::string label = r.manifest.label;
        for (int k = 2; labels.count(label); ++k) label = r.manifest.label + " (" + std::to_string(k) + ")";
        r.manifest.label = label;
        for (evaluation::ModelEvalReport& rep : r.replicates) rep.model = label;
        labels.insert(label);
    }
    // Refuse mixed settings before the logit metrics are spent on them.
    evaluation::CompareRunsOptions options;
    options.allow_mixed_settings = req.allow_mixed_settings;
    options.bootstrap.resamples = req.bootstrap_resamples;
    options.bootstrap.seed = req.bootstrap_seed;
    for (size_t i = 1; i < result.runs.size(); ++i) {
        const std::vector<std::string> problems = evaluation::comparability_problems(result.runs[0].manifest, result.runs[i].manifest);
        if (!problems.empty() && !req.allow_mixed_settings) {
            std::string text;
            for (const std::string& p : problems) text += (text.empty() ? "" : "; ") + p;
            throw UserError("evalsuite: " + result.runs[i].manifest.label + " was run with other settings than " +
                            result.runs[0].manifest.label + ": " + text +
                            " (refused side by side; --allow-mixed-settings compares them anyway)");
        }
    }
    if (!req.text.empty()) {
        const std::string reference = result.runs[0].manifest.model_path;
        for (size_t i = 0; i < result.runs.size(); ++i) {
            cancel.throw_if_cancelled();
            if (result.loaded[i] && result.runs[i].logits && result.runs[i].logits->text == req.text &&
                result.runs[i].logits->window == req.text_window && result.runs[i].logits->windows == req.windows &&
                result.runs[i].logits->max_windows == req.text_windows && result.runs[i].logits->reference == (i == 0 ? "" : result.runs[0].manifest.label))
                continue;  // a saved run measured on the same text keeps its numbers
            const std::string path = result.runs[i].manifest.model_path;
            result.runs[i].logits =
                evalsuite_logits(req, path, i == 0 ? "" : reference, result.runs[0].manifest.label, sink, cancel);
        }
    }
    result.tables = evaluation::compare_runs(result.runs, options);
    return result;
}

EvalSuiteResult compare_evaluation_runs(std::vector<EvaluationRun> runs, bool allow_mixed_settings, int64_t bootstrap_resamples,
                                        uint64_t bootstrap_seed) {
    EvalSuiteResult result;
    result.runs = std::move(runs);
    result.loaded.assign(result.runs.size(), true);
    evaluation::CompareRunsOptions options;
    options.allow_mixed_settings = allow_mixed_settings;
    options.bootstrap.resamples = bootstrap_resamples;
    options.bootstrap.seed = bootstrap_seed;
    result.tables = evaluation::compare_runs(result.runs, options);
    return result;
}

LmEvalExportSummary export_evalsuite_lm_eval(const EvalSuiteRequest& req, const std::string& folder, const std::string& group) {
    const evaluation::EvalSuite suite = evaluation::load_eval_suite(resolve_suite_path(req.suite));
    const std::vector<std::string> selection = evalsuite_selection(suite, req);
    evaluation::EvalSuite selected;
    selected.source = suite.source;
    selected.sha256 = suite.sha256;
    const std::set<std::string> wanted(selection.begin(), selection.end());
    for (const evaluation::EvalItem& item : suite.items)
        if (wanted.count(item.id)) selected.items.push_back(item);
    const evaluation::LmEvalExport e = evaluation::export_lm_eval_tasks(selected, folder, group, req.max_tokens);
    return {e.group, e.exported_ids, e.left_out};
}

std::vector<std::pair<std::string, double>> evaluation_run_metrics(const EvalSuiteResult& result, size_t index) {
    std::vector<std::pair<std::string, double>> out;
    const EvaluationRun& run = result.runs.at(index);
    const evaluation::EvaluationTables& t = result.tables;
    auto rate = [&](const std::string& name, const evaluation::RateInterval& r) {
        if (r.trials > 0) out.emplace_back(name, r.rate);
    };
    if (index < t.stats.summaries.size()) {
        const evaluation::ModelSummary& s = t.stats.summaries[index];
        rate("evalsuite/success", s.overall);
        for (const auto& [category, r] : s.categories) rate("evalsuite/success/" + category, r);
        rate("evalsuite/json_valid", s.json_valid);
        rate("evalsuite/tool_name", s.tool_name);
        rate("evalsuite/tool_arguments", s.tool_arguments);
    }
    if (index > 0 && index - 1 < t.stats.comparisons.size()) {
        out.emplace_back("evalsuite/right_to_wrong", static_cast<double>(t.stats.comparisons[index - 1].overall.right_to_wrong));
        out.emplace_back("evalsuite/wrong_to_right", static_cast<double>(t.stats.comparisons[index - 1].overall.wrong_to_right));
    }
    if (run.logits) {
        out.emplace_back("evalsuite/ppl", run.logits->ppl);
        auto optional = [&](const std::string& name, const std::optional<double>& v) {
            if (v) out.emplace_back(name, *v);
        };
        optional("evalsuite/delta_ppl", run.logits->delta_ppl);
        optional("evalsuite/kl_mean", run.logits->kl_mean);
        optional("evalsuite/kl_p99", run.logits->kl_p99);
        optional("evalsuite/top1_agreement", run.logits->top1_agreement);
    }
    const evaluation::ServingCost& c = run.cost;
    out.emplace_back("evalsuite/weight_bytes", static_cast<double>(c.weights.bytes()));
    out.emplace_back("evalsuite/kv_bytes_per_token", c.kv.bytes_per_token);
    out.emplace_back("evalsuite/prefill_tokens_per_second", c.measured.prefill_tokens_per_second);
    out.emplace_back("evalsuite/ttft_s", c.measured.ttft_mean_s);
    out.emplace_back("evalsuite/decode_tokens_per_second", c.measured.decode_tokens_per_second);
    out.emplace_back("evalsuite/seconds_per_success", c.seconds_per_success);  // NaN without a success: recorded as it is
    return out;
}

std::vector<std::string> write_evaluation_csv(const EvalSuiteResult& result, const std::string& folder) {
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) throw UserError("evalsuite: cannot create the folder " + folder + ": " + ec.message());
    std::vector<std::string> written;
    for (const auto& [name, text] : evaluation::evaluation_csv_files(result.runs, result.tables)) {
        const std::string path = (fs::path(folder) / name).string();
        write_file_atomically(path, text);
        written.push_back(path);
    }
    return written;
}

}  // namespace ql
