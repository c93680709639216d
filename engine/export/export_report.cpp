// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/export_report.h"

#include <ATen/Functions.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/engine_runtime.h"
#include "engine/core/errors.h"
#include "engine/export/export_folder.h"
#include "engine/export/report_plots.h"
#include "engine/evaluation/evaluation_tables.h"
#include "engine/io/sha256.h"
#include "engine/quant/quant_plan.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string esc(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '<') o += "&lt;";
        else if (c == '>') o += "&gt;";
        else if (c == '&') o += "&amp;";
        else if (c == '"') o += "&quot;";
        else o += c;
    }
    return o;
}

std::string num(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

json read_json(const std::string& path) {
    std::ifstream f(path);
    if (!f) return json();
    return json::parse(f, nullptr, false);
}

std::string scalar_text(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return num(v.get<double>());
    if (v.is_null()) return "-";
    return v.dump();
}

// Top-level scalars of a report, nested objects one level deep ("after.perplexity").
void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out, int depth) {
    if (!j.is_object()) return;
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it->is_object() && depth == 0) flatten(*it, prefix + it.key() + ".", out, 1);
        else if (!it->is_array() && !it->is_object()) out.emplace_back(prefix + it.key(), scalar_text(*it));
    }
}

std::string img(const std::string& png, const std::string& alt) {
    return "<img alt=\"" + esc(alt) + "\" src=\"data:image/png;base64," + base64_encode(png) + "\">\n";
}

double weight_sqnr_db(LayerQuantizer& l) {
    const at::Tensor w = l.layer().weight.detach().to(at::kFloat);
    const at::Tensor q = l.quantized_weight().to(at::kFloat);
    const double sig = w.pow(2).sum().item<double>(), err = (w - q).pow(2).sum().item<double>();
    return err == 0 ? INFINITY : 10 * std::log10(sig / err);
}

std::string report_pct(double v) {
    if (!std::isfinite(v)) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", 100.0 * v);
    return b;
}

std::string report_rate(const evaluation::RateInterval& r) {
    if (r.trials == 0) return "-";
    return report_pct(r.rate) + " % [" + report_pct(r.ci.low) + ", " + report_pct(r.ci.high) + "] (" + std::to_string(r.successes) +
           "/" + std::to_string(r.trials) + ")";
}

std::string report_optional(const std::optional<double>& v) { return v ? num(*v) : std::string("-"); }

// The "Evaluation" section: the runs side by side, the baseline first.
void evaluation_section(std::ostringstream& h, const std::vector<std::string>& texts) {
    using namespace evaluation;
    std::vector<EvaluationRun> runs;
    for (size_t i = 0; i < texts.size(); ++i)
        runs.push_back(evaluation_run_from_json(json::parse(texts[i]), "evaluation " + std::to_string(i + 1)));
    CompareRunsOptions options;
    options.allow_mixed_settings = true;
    const EvaluationTables t = compare_runs(runs, options);
    const RunManifest& base = runs.front().manifest;
    h << "<h2>Evaluation</h2>\n<p>Suite " << esc(base.suite) << " (" << base.item_ids.size() << " items, sha256 <code>"
      << esc(base.suite_sha256) << "</code>), " << esc(base.decoding.description) << ", prompts through the chat template <code>"
      << esc(base.chat_template_sha256.substr(0, 16)) << "</code>" << (base.tools_mode.empty() ? "" : ", tools in the " + esc(base.tools_mode))
      << ". Baseline: " << esc(base.label) << ". Intervals: 95 % Wilson; differences: paired bootstrap.</p>\n";
    for (const std::string& w : t.warnings) h << "<p><b>Warning:</b> " << esc(w) << "</p>\n";
    h << "<table><tr><th>category</th>";
    for (const std::string& m : t.models) h << "<th>" << esc(m) << "</th>";
    h << "</tr>\n";
    const std::vector<ModelSummary>& s = t.stats.summaries;
    for (size_t c = 0; c < s.front().categories.size(); ++c) {
        h << "<tr><td>" << esc(s.front().categories[c].first) << "</td>";
        for (const ModelSummary& m : s) h << "<td>" << report_rate(m.categories[c].second) << "</td>";
        h << "</tr>\n";
    }
    auto row = [&](const char* name, RateInterval ModelSummary::*field) {
        h << "<tr><th>" << name << "</th>";
        for (const ModelSummary& m : s) h << "<td>" << report_rate(m.*field) << "</td>";
        h << "</tr>\n";
    };
    row("overall", &ModelSummary::overall);
    row("schema validity", &ModelSummary::json_valid);
    row("tool-call name", &ModelSummary::tool_name);
    row("tool-call arguments", &ModelSummary::tool_arguments);
    h << "</table>\n";
    if (!t.stats.comparisons.empty()) {
        h << "<table><tr><th>against " << esc(t.models.front()) << "</th><th>right&rarr;wrong</th><th>wrong&rarr;right</th>"
             "<th>difference [95 % CI]</th><th>McNemar p</th></tr>\n";
        for (const ModelComparison& c : t.stats.comparisons)
            h << "<tr><td>" << esc(c.model) << "</td><td>" << c.overall.right_to_wrong << "</td><td>" << c.overall.wrong_to_right
              << "</td><td>" << report_pct(c.overall.difference) << " [" << report_pct(c.overall.bootstrap.low) << ", "
              << report_pct(c.overall.bootstrap.high) << "] pt</td><td>" << num(c.overall.mcnemar_p) << "</td></tr>\n";
        h << "</table>\n";
    }
    if (!t.flips.empty()) {
        h << "<table><tr><th>model</th><th>item</th><th>flip</th><th>" << esc(t.models.front()) << " answered</th><th>model answered</th></tr>\n";
        size_t shown = 0;
        for (const FlipRow& f : t.flips) {
            if (++shown > 50) break;
            h << "<tr><td>" << esc(f.model) << "</td><td>" << esc(f.id) << "</td><td>" << esc(f.direction) << "</td><td><pre>"
              << esc(f.baseline_output) << "</pre></td><td><pre>" << esc(f.model_output) << "</pre></td></tr>\n";
        }
        h << "</table>\n";
        if (t.flips.size() > 50) h << "<p>" << t.flips.size() - 50 << " more flips: quantlab-cli evalsuite --csv-dir writes them all.</p>\n";
    }
    h << "<table><tr><th>model</th><th>perplexity</th><th>&Delta;ppl</th><th>KL mean</th><th>KL p99</th><th>top-1 agreement</th>"
         "<th>weights (MiB)</th><th>bits/param</th><th>KV bytes/token</th><th>prefill tok/s</th><th>TTFT ms</th><th>decode tok/s</th>"
         "<th>s/success</th><th>estimated decode tok/s</th></tr>\n";
    for (const EvaluationRun& r : runs) {
        const ServingCost& c = r.cost;
        h << "<tr><td>" << esc(r.manifest.label) << "</td><td>" << (r.logits ? num(r.logits->ppl) : "-") << "</td><td>"
          << (r.logits ? report_optional(r.logits->delta_ppl) : "-") << "</td><td>" << (r.logits ? report_optional(r.logits->kl_mean) : "-")
          << "</td><td>" << (r.logits ? report_optional(r.logits->kl_p99) : "-") << "</td><td>"
          << (r.logits && r.logits->top1_agreement ? report_pct(*r.logits->top1_agreement) + " %" : "-") << "</td><td>"
          << num(static_cast<double>(c.weights.bytes()) / 1048576.0) << "</td><td>" << num(c.weights.bits_per_parameter()) << "</td><td>"
          << num(c.kv.bytes_per_token) << "</td><td>" << num(c.measured.prefill_tokens_per_second) << "</td><td>"
          << num(1000.0 * c.measured.ttft_mean_s) << "</td><td>" << num(c.measured.decode_tokens_per_second) << "</td><td>"
          << num(c.seconds_per_success) << "</td><td>"
          << (c.estimates.empty() ? std::string("-") : num(c.estimates.front().decode_tokens_per_second) + " (" + esc(c.estimates.front().gpu) + ", estimate)")
          << "</td></tr>\n";
    }
    h << "</table>\n<p>Speeds measured on " << esc(runs.front().cost.measured.device)
      << " simulate the formats in float32; GPU rates are bandwidth estimates (weights + KV cache read per token).</p>\n";
    h << "<table><tr><th>checklist</th><th></th><th>what was measured</th></tr>\n";
    for (const ChecklistEntry& c : t.checklist)
        h << "<tr><td>" << esc(c.item) << "</td><td>" << (c.done ? "&#x2611;" : "&#x2610;") << "</td><td>" << esc(c.evidence) << "</td></tr>\n";
    h << "</table>\n<table><tr><th>run</th><th>model</th><th>sha256</th><th>scheme</th><th>QuantLab</th><th>LibTorch</th></tr>\n";
    for (const EvaluationRun& r : runs)
        h << "<tr><td>" << esc(r.manifest.label) << "</td><td>" << esc(r.manifest.model_path) << "</td><td><code>"
          << esc(r.manifest.model_sha256) << "</code></td><td>" << esc(r.manifest.quant_scheme) << "</td><td>"
          << esc(r.manifest.quantlab_version) << " (" << esc(r.manifest.quantlab_commit) << ")</td><td>" << esc(r.manifest.torch_version)
          << "</td></tr>\n";
    h << "</table>\n";
}

}  // namespace

std::vector<ExportSeries> series_from_checkpoint_reports(const std::string& folder) {
    std::vector<ExportSeries> out;
    const json ptq = read_json(folder + "/ptq_report.json");
    if (ptq.is_object() && ptq.contains("layers") && ptq["layers"].is_array()) {
        ExportSeries s{"ptq/output_sqnr_db by layer index", {}, {}};
        int64_t i = 0;
        for (const json& l : ptq["layers"]) {
            s.steps.push_back(i++);
            s.values.push_back(l.contains("output_sqnr_db") && l["output_sqnr_db"].is_number() ? l["output_sqnr_db"].get<double>()
                                                                                                : NAN);
        }
        out.push_back(std::move(s));
    }
    const json train = read_json(folder + "/train_report.json");
    if (train.is_object() && train.contains("before") && train.contains("after") && train["before"].is_object()) {
        const int64_t steps = train.value("steps", int64_t{0});
        for (auto it = train["before"].begin(); it != train["before"].end(); ++it) {
            if (!it->is_number() || !train["after"].contains(it.key()) || !train["after"][it.key()].is_number()) continue;
            out.push_back({"eval/" + it.key(), {0, steps}, {it->get<double>(), train["after"][it.key()].get<double>()}});
        }
    }
    return out;
}

std::string report_html(const ReportInputs& in, const std::vector<ExportSeries>& series) {
    std::ostringstream h;
    const QuantizedModel& q = *in.quantized;
    const ModelConfig& c = q.model().config();
    const ModelSize size = q.size();
    h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>QuantLab report: " << esc(in.model_name)
      << "</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
         "th{background:#f0f0f0}pre{background:#f7f7f7;padding:8px;overflow-x:auto}img{display:block;margin:1em 0}</style>"
         "</head><body>\n";
    h << "<h1>QuantLab report</h1>\n<h2>Model</h2>\n<table>\n";
    h << "<tr><th>model</th><td>" << esc(in.model_name) << "</td></tr>\n<tr><th>folder</th><td>" << esc(in.folder)
      << "</td></tr>\n<tr><th>architecture</th><td>" << esc(c.architecture) << "</td></tr>\n<tr><th>parameters</th><td>"
      << size.parameters << "</td></tr>\n<tr><th>quantized parameters</th><td>" << size.quantized_parameters
      << "</td></tr>\n<tr><th>bits per parameter</th><td>" << num(size.bits_per_parameter())
      << "</td></tr>\n<tr><th>size (MiB, scales included)</th><td>" << num(size.bytes() / 1048576.0) << "</td></tr>\n";
    if (q.model().is_encoder())  // what its eval/cosine_* and eval/spearman metrics compare
        h << "<tr><th>sentence embedding</th><td>" << esc(c.sentence.pooling_name()) << " pooling"
          << (c.sentence.normalize ? ", L2-normalised" : "") << " (" << esc(c.sentence.source) << ")</td></tr>\n";
    // The KV cache next to the weights: per token of context and for an 8k context.
    const KvCacheMemory kv = q.kv_cache_memory();
    if (kv.layers > 0)
        h << "<tr><th>KV cache</th><td>" << esc(q.recipe().kv_cache.describe()) << ": " << num(kv.bytes_per_token())
          << " bytes per token, " << num(kv.bytes_for(8192) / 1048576.0) << " MiB per 8k context (BF16: "
          << num(kv.fp16_bits_per_token * 8192.0 / 8.0 / 1048576.0) << " MiB)</td></tr>\n";
    if (q.recipe().rotation.enabled()) {
        h << "<tr><th>rotation</th><td>" << esc(q.recipe().rotation.describe());
        for (const std::string& n : q.rotation_notes()) h << "<br>" << esc(n);
        h << "</td></tr>\n";
    }
    h << "</table>\n";

    h << "<h2>Recipe</h2>\n<p>" << esc(q.recipe().name) << " &mdash; " << esc(q.recipe().description) << "</p>\n<pre>"
      << esc(recipe_to_json(q.recipe())) << "</pre>\n";

    h << "<h2>Metrics</h2>\n";
    std::vector<std::pair<std::string, std::string>> summary;
    flatten(read_json(in.folder + "/ptq_report.json"), "ptq.", summary, 0);
    flatten(read_json(in.folder + "/train_report.json"), "train.", summary, 0);
    if (!summary.empty()) {
        h << "<table><tr><th>metric</th><th>value</th></tr>\n";
        for (const auto& [k, v] : summary) h << "<tr><td>" << esc(k) << "</td><td>" << esc(v) << "</td></tr>\n";
        h << "</table>\n";
    }
    if (!series.empty()) {
        h << "<table><tr><th>series</th><th>points</th><th>first</th><th>last</th><th>min</th><th>max</th></tr>\n";
        for (const ExportSeries& s : series) {
            double lo = INFINITY, hi = -INFINITY;
            for (double v : s.values)
                if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
            h << "<tr><td>" << esc(s.name) << "</td><td>" << s.values.size() << "</td><td>"
              << (s.values.empty() ? "-" : num(s.values.front())) << "</td><td>" << (s.values.empty() ? "-" : num(s.values.back()))
              << "</td><td>" << num(lo) << "</td><td>" << num(hi) << "</td></tr>\n";
        }
        h << "</table>\n";
    }

    h << "<h2>Curves</h2>\n";
    if (series.empty()) h << "<p>No metric series (export with --project P.qlab --run N for a run's curves).</p>\n";
    for (const ExportSeries& s : series) {
        std::vector<double> x(s.steps.begin(), s.steps.end());
        h << img(line_plot_png(s.name, "step", s.name, x, s.values), s.name);
    }

    h << "<h2>Per-layer error</h2>\n";
    const json ptq = read_json(in.folder + "/ptq_report.json");
    std::map<std::string, json> ptq_layers;
    if (ptq.is_object() && ptq.contains("layers") && ptq["layers"].is_array())
        for (const json& l : ptq["layers"]) ptq_layers[l.value("layer", "")] = l;
    h << "<table><tr><th>#</th><th>layer</th><th>weight</th><th>input</th><th>method</th><th>weight SQNR dB</th>"
         "<th>output SQNR dB</th><th>RTN output SQNR dB</th><th>weight MSE</th></tr>\n";
    std::vector<std::string> labels;
    std::vector<double> sqnr;
    bool have_output = false;
    int index = 0;
    for (const auto& lp : q.layers()) {
        LayerQuantizer& l = *lp;
        if (!l.weight_enabled() && !l.input_enabled()) continue;
        const double wdb = l.weight_enabled() ? weight_sqnr_db(l) : NAN;
        const auto it = ptq_layers.find(l.name());
        auto field = [&](const char* k) {
            return it != ptq_layers.end() && it->second.contains(k) && it->second[k].is_number() ? it->second[k].get<double>() : NAN;
        };
        const double out_db = field("output_sqnr_db");
        have_output = have_output || std::isfinite(out_db);
        h << "<tr><td>" << index++ << "</td><td>" << esc(l.name()) << "</td><td>" << esc(describe(l.plan().weight, false))
          << "</td><td>" << esc(describe(l.plan().input, true)) << "</td><td>"
          << esc(it != ptq_layers.end() ? it->second.value("method", "") : "") << "</td><td>" << num(wdb) << "</td><td>"
          << num(out_db) << "</td><td>" << num(field("rtn_output_sqnr_db")) << "</td><td>" << num(field("weight_mse"))
          << "</td></tr>\n";
        labels.push_back(l.name());
        sqnr.push_back(out_db);
    }
    h << "</table>\n";
    if (have_output)
        h << img(bar_chart_png("Output SQNR per layer (dB, index as in the table)", "output SQNR (dB)", labels, sqnr),
                 "output SQNR per layer");
    else
        h << "<p>No per-layer output SQNR (the checkpoint has no ptq_report.json).</p>\n";

    // KV caches: the scales a deployment uses and the cache's error on calibration tokens.
    if (ptq.is_object() && ptq.contains("kv_cache") && ptq["kv_cache"].is_object() && ptq["kv_cache"].contains("layers") &&
        ptq["kv_cache"]["layers"].is_array() && !ptq["kv_cache"]["layers"].empty()) {
        h << "<h2>KV cache</h2>\n<table><tr><th>attention</th><th>quantizer</th><th>k_scale</th><th>v_scale</th>"
             "<th>K SQNR dB</th><th>V SQNR dB</th></tr>\n";
        auto first = [](const json& l, const char* k) {
            return l.contains(k) && l[k].is_array() && !l[k].empty() && l[k][0].is_number() ? num(l[k][0].get<double>()) +
                                                                                                  (l[k].size() > 1 ? " …" : "")
                                                                                            : std::string("-");
        };
        auto db = [](const json& l, const char* k) { return l.contains(k) && l[k].is_number() ? num(l[k].get<double>()) : std::string("-"); };
        for (const json& l : ptq["kv_cache"]["layers"])
            h << "<tr><td>" << esc(l.value("attention", "")) << "</td><td>" << esc(l.value("quantizer", "")) << "</td><td>"
              << first(l, "key_scale") << "</td><td>" << first(l, "value_scale") << "</td><td>" << db(l, "key_sqnr_db")
              << "</td><td>" << db(l, "value_sqnr_db") << "</td></tr>\n";
        h << "</table>\n";
    }

    if (!in.evaluations.empty()) evaluation_section(h, in.evaluations);

    // Environment and reproducibility.
    const RuntimeInfo rt = initialise_engine_runtime();
    const json run_config = in.run_config_json.empty() ? json() : json::parse(in.run_config_json, nullptr, false);
    std::string seed = "unknown (not recorded with the checkpoint; export with --project/--run)";
    if (run_config.is_object() && run_config.contains("seed")) seed = scalar_text(run_config["seed"]);
    h << "<h2>Environment and reproducibility</h2>\n<table>\n";
    h << "<tr><th>QuantLab</th><td>" << esc(rt.quantlab_version) << "</td></tr>\n<tr><th>LibTorch</th><td>"
      << esc(rt.torch_version) << "</td></tr>\n<tr><th>threads</th><td>" << rt.threads << "</td></tr>\n<tr><th>BLAS</th><td>"
      << esc(rt.blas) << "</td></tr>\n<tr><th>device</th><td>CPU" << (rt.cuda_kernels ? " (CUDA kernels built)" : "")
      << "</td></tr>\n<tr><th>seed</th><td>" << esc(seed) << "</td></tr>\n";
    if (!in.project.empty())
        h << "<tr><th>project run</th><td>" << esc(in.project) << " run " << in.run_id << "</td></tr>\n";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(in.folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && (is_hf_weights_file(name) || name == "config.json" || name.rfind("quantlab_", 0) == 0))
            h << "<tr><th>SHA-256 " << esc(name) << "</th><td><code>" << sha256_file_hex(entry.path().string())
              << "</code></td></tr>\n";
    }
    std::string calib = ptq.is_object() ? ptq.value("calibration", "") : "";
    if (calib.empty() && run_config.is_object()) calib = run_config.value("calib", run_config.value("data", ""));
    if (!calib.empty()) {
        h << "<tr><th>calibration data</th><td>" << esc(calib);
        if (fs::is_regular_file(calib, ec))
            h << "<br>SHA-256 <code>" << sha256_file_hex(calib) << "</code>";
        else
            h << " (built-in or not a file here: generated from the seed, no hash)";
        h << "</td></tr>\n";
    }
    h << "</table>\n";
    if (run_config.is_object()) h << "<h3>Run configuration</h3>\n<pre>" << esc(run_config.dump(2)) << "</pre>\n";
    h << "</body></html>\n";
    return h.str();
}

FolderExportResult export_report(const ReportInputs& in, const std::string& out, bool force, JobSink& sink,
                                 const CancellationToken& cancel) {
    if (!in.quantized) throw UserError("report: the model is not quantized");
    const std::vector<ExportSeries> series = in.series.empty() ? series_from_checkpoint_reports(in.folder) : in.series;
    sink.progress(0, 1, "write");
    std::ostringstream csv;
    csv.precision(17);
    csv << "series,step,value\n";
    for (const ExportSeries& s : series)
        for (size_t i = 0; i < s.steps.size() && i < s.values.size(); ++i)
            csv << '"' << s.name << "\"," << s.steps[i] << ',' << s.values[i] << '\n';
    const std::string html = report_html(in, series);
    cancel.throw_if_cancelled();
    ExportFolder folder(out, force);
    folder.write("report.html", html);
    folder.write("metrics.csv", csv.str());
    folder.write("recipe.json", recipe_to_json(in.quantized->recipe()));
    folder.commit();
    sink.progress(1, 1, "write");
    FolderExportResult r;
    r.files = folder.files();
    r.bytes = folder.bytes();
    return r;
}

}  // namespace ql
