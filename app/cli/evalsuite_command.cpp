// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli evalsuite MODEL [MODEL2 ...] --suite FILE|default [--json] ...: the models answer
// an eval suite through their chat templates and are compared with the first (docs/CLI.md
// "evalsuite", docs/EVAL_SUITES.md): success per category with intervals, schema validity,
// tool-call accuracy, flips, logit metrics on real text, serving cost, the checklist.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/api/evalsuite_api.h"
#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "projects/evalsuite_records.h"

namespace ql::cli {
namespace {

namespace fs = std::filesystem;
using namespace ql::evaluation;

const char* kUsage =
    "quantlab-cli evalsuite MODEL [MODEL2 ...] [--suite FILE|default] [--json] [--csv-dir DIR] [--save DIR]\n"
    "    [--label L ...] [--items ID,ID] [--categories C,C] [--limit N] [--max-tokens N]\n"
    "    [--samples N --temperature T --seed S] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R]\n"
    "    [--text FILE [--text-window N] [--text-windows N] [--windows hf|quantlab|llama]] [--gpu NAME ...] [--estimate-context N]\n"
    "    [--contexts N,N] [--allow-mixed-settings] [--bootstrap N] [--project P.qlab] [--device cpu|cuda|cuda:N]\n\n"
    "MODEL: an HF model folder, a GGUF file, a QuantLab quantized checkpoint (ptq --out), 'demo', a LoRA run (DIR of\n"
    "'train lora|qlora': its base made again with the adapter, unmerged; serving cost counts the adapter), or a saved run\n"
    "(a .json file written by --save), which is read instead of run. The first model is the baseline (the FP model):\n"
    "the others' flips, McNemar tests and paired bootstrap intervals are against it.\n"
    "Each item goes through the model's own chat template; a template that ignores tools (SmolLM2's) gets them\n"
    "written into the system message as Qwen2.5's template does. Greedy unless --samples N > 1 (then N seeded samples\n"
    "per item at --temperature T, default 0.7). --max-tokens (default 256) applies to items without their own.\n"
    "--text FILE: real text for the logit metrics (perplexity; against the first model Δppl, mean and p99 KL, top-1\n"
    "agreement), windows of --text-window tokens (default 512; at most --text-windows of them), --windows hf (default).\n"
    "Serving cost: weights bytes in the real packed layout, KV cache per --contexts (default 2048,8192,32768),\n"
    "prefill / decode tokens/s and time to first token measured here, a bandwidth estimate of decode tokens/s on\n"
    "--gpu NAME (default H200; H100, A100, L40S, B200, RTX-4090 ...) at --estimate-context (default 2048), and\n"
    "seconds per successful answer.\n"
    "Runs made with other settings (decoding, suite, items, chat template) are refused side by side unless\n"
    "--allow-mixed-settings. --csv-dir writes every table as CSV; --save writes each new run as DIR/<label>.json;\n"
    "--project records each model's run (kind evalsuite). --lm-eval-export DIR also writes the selected items as\n"
    "lm-evaluation-harness tasks (group quantlab_evalsuite; docs/EVAL_SUITES.md \"lm-eval export\"). Ctrl-C cancels between items (exit code 130).";

std::string pct(double v) {
    if (!std::isfinite(v)) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", 100.0 * v);
    return b;
}

std::string rate_text(const RateInterval& r) {
    if (r.trials == 0) return "-";
    char b[96];
    std::snprintf(b, sizeof b, "%s %% [%s, %s] (%lld/%lld)", pct(r.rate).c_str(), pct(r.ci.low).c_str(), pct(r.ci.high).c_str(),
                  static_cast<long long>(r.successes), static_cast<long long>(r.trials));
    return b;
}

std::string num(double v, const char* fmt = "%.4g") {
    if (!std::isfinite(v)) return "-";
    char b[48];
    std::snprintf(b, sizeof b, fmt, v);
    return b;
}
std::string num(const std::optional<double>& v, const char* fmt = "%.4g") { return v ? num(*v, fmt) : "-"; }

std::string one_line(std::string s, size_t max) {
    for (char& c : s)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (s.size() > max) {
        size_t cut = max;
        while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // a character boundary
        s = s.substr(0, cut) + "…";
    }
    return s;
}

void print_row(const std::vector<std::string>& cells, const std::vector<int>& widths) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
        std::string c = cells[i];
        const int w = i < widths.size() ? widths[i] : 0;
        if (static_cast<int>(c.size()) < w) c += std::string(static_cast<size_t>(w) - c.size(), ' ');
        line += (i ? "  " : "") + c;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
}

void print_text(const EvalSuiteResult& r) {
    const EvaluationTables& t = r.tables;
    const RunManifest& base = r.runs.front().manifest;
    std::printf("suite    %s (%zu items, sha256 %s)\n", base.suite.c_str(), base.item_ids.size(), base.suite_sha256.substr(0, 16).c_str());
    std::printf("decoding %s, max %lld tokens per item unless the item says\n", base.decoding.description.c_str(),
                static_cast<long long>(base.decoding.max_tokens));
    std::printf("\nruns\n");
    for (size_t i = 0; i < r.runs.size(); ++i) {
        const RunManifest& m = r.runs[i].manifest;
        std::printf("  %zu %s%s: %s\n    %s, sha256 %s; %s%s\n    prompts: %s%s%s; QuantLab %s (%s), LibTorch %s, %s\n", i + 1,
                    m.label.c_str(), r.loaded[i] ? " (saved run)" : "", m.model_path.c_str(), m.model_kind.c_str(),
                    m.model_sha256.substr(0, 16).c_str(), m.quant_scheme.c_str(),
                    m.quant_formats.empty() ? "" : (": " + m.quant_formats).c_str(), m.prompt_format.c_str(),
                    m.chat_template_sha256.empty() ? "" : (" sha256 " + m.chat_template_sha256.substr(0, 16)).c_str(),
                    m.tools_mode.empty() ? "" : (", tools in the " + m.tools_mode).c_str(), m.quantlab_version.c_str(),
                    m.quantlab_commit.substr(0, 12).c_str(), m.torch_version.c_str(), m.device.c_str());
    }
    for (const std::string& w : t.warnings) std::printf("warning: %s\n", w.c_str());

    std::vector<int> widths = {16};
    for (size_t i = 0; i < t.models.size(); ++i) widths.push_back(30);
    std::printf("\nsuccess per category (95 %% Wilson interval)\n");
    std::vector<std::string> header = {"category"};
    for (const std::string& m : t.models) header.push_back(m);
    print_row(header, widths);
    const std::vector<ModelSummary>& s = t.stats.summaries;
    for (size_t c = 0; c < s.front().categories.size(); ++c) {
        std::vector<std::string> row = {s.front().categories[c].first};
        for (const ModelSummary& m : s) row.push_back(rate_text(m.categories[c].second));
        print_row(row, widths);
    }
    auto summary_row = [&](const char* name, RateInterval ModelSummary::*field) {
        std::vector<std::string> row = {name};
        for (const ModelSummary& m : s) row.push_back(rate_text(m.*field));
        print_row(row, widths);
    };
    summary_row("overall", &ModelSummary::overall);
    summary_row("schema valid", &ModelSummary::json_valid);
    summary_row("tool name", &ModelSummary::tool_name);
    summary_row("tool arguments", &ModelSummary::tool_arguments);
    bool sampled = false;
    for (const ReplicateSpread& sp : t.spreads) sampled = sampled || sp.rates.n > 1;
    if (sampled) {
        std::printf("\nreplicates (success per replicate: mean [95 %% t interval], min-max)\n");
        for (const ReplicateSpread& sp : t.spreads)
            std::printf("  %-16s %lld: %s %% [%s, %s], %s-%s %%\n", sp.model.c_str(), static_cast<long long>(sp.rates.n),
                        pct(sp.rates.mean).c_str(), pct(sp.rates.ci.low).c_str(), pct(sp.rates.ci.high).c_str(),
                        pct(sp.min_rate).c_str(), pct(sp.max_rate).c_str());
    }

    if (!t.stats.comparisons.empty()) {
        std::printf("\nagainst %s (paired on items; difference with its paired-bootstrap 95 %% interval)\n", t.models.front().c_str());
        print_row({"model", "right->wrong", "wrong->right", "difference", "interval", "McNemar p"}, {16, 12, 12, 10, 18, 9});
        for (const ModelComparison& c : t.stats.comparisons)
            print_row({c.model, std::to_string(c.overall.right_to_wrong), std::to_string(c.overall.wrong_to_right),
                       pct(c.overall.difference) + " %", "[" + pct(c.overall.bootstrap.low) + ", " + pct(c.overall.bootstrap.high) + "] %",
                       num(c.overall.mcnemar_p, "%.3g")},
                      {16, 12, 12, 10, 18, 9});
        if (!t.flips.empty()) {
            std::printf("\nflips (%zu; both outputs, first 40 characters)\n", t.flips.size());
            size_t shown = 0;
            for (const FlipRow& f : t.flips) {
                if (++shown > 30) {
                    std::printf("  ... %zu more (--csv-dir writes them all: flip_outputs.csv)\n", t.flips.size() - 30);
                    break;
                }
                std::printf("  %-14s %-16s %s  %s: %s | %s: %s\n", f.model.c_str(), f.id.c_str(),
                            f.direction == "right_to_wrong" ? "R->W" : "W->R", f.baseline.c_str(), one_line(f.baseline_output, 40).c_str(),
                            f.model.c_str(), one_line(f.model_output, 40).c_str());
            }
        }
    }

    bool logits = false;
    for (const EvaluationRun& run : r.runs) logits = logits || run.logits.has_value();
    if (logits) {
        const LogitMetrics& l = *r.runs.front().logits;
        std::printf("\nlogit metrics on %s (%s windows of %lld tokens, %lld predictions)\n", l.text.c_str(), l.windows.c_str(),
                    static_cast<long long>(l.window), static_cast<long long>(l.tokens));
        print_row({"model", "ppl", "delta ppl", "KL mean", "KL p99", "top-1 agree"}, {16, 10, 10, 10, 10, 11});
        for (const EvaluationRun& run : r.runs) {
            if (!run.logits) continue;
            const LogitMetrics& m = *run.logits;
            print_row({run.manifest.label, num(m.ppl), num(m.delta_ppl), num(m.kl_mean), num(m.kl_p99),
                       m.top1_agreement ? pct(*m.top1_agreement) + " %" : "-"},
                      {16, 10, 10, 10, 10, 11});
        }
        if (!t.predictors.empty()) {
            std::printf("how each predicts the right->wrong flips across the quantized runs (Spearman rank correlation):");
            for (const FlipPredictor& p : t.predictors) std::printf(" %s %s", p.metric.c_str(), num(p.spearman, "%.2f").c_str());
            std::printf("\n");
        }
    }

    std::printf("\nserving cost (weights in the packed export layout; speed measured here, %s; GPU rates are estimates)\n",
                r.runs.front().cost.measured.device.c_str());
    std::string gpu = r.runs.front().cost.estimates.empty() ? "" : r.runs.front().cost.estimates.front().gpu;
    const std::vector<int> cw = {16, 10, 8, 10, 12, 10, 10, 10, 12, 10};
    print_row({"model", "weights", "bits/par", "KV B/tok", "prefill t/s", "TTFT ms", "decode t/s", "s/success",
               gpu.empty() ? "" : "est. " + gpu + " t/s", gpu.empty() ? "" : "est. s/succ"},
              cw);
    for (const EvaluationRun& run : r.runs) {
        const ServingCost& c = run.cost;
        char weights[32];
        std::snprintf(weights, sizeof weights, "%.1f MiB", static_cast<double>(c.weights.bytes()) / 1048576.0);
        print_row({run.manifest.label, weights, num(c.weights.bits_per_parameter(), "%.2f"), num(c.kv.bytes_per_token, "%.0f"),
                   num(c.measured.prefill_tokens_per_second, "%.0f"), num(1000.0 * c.measured.ttft_mean_s, "%.1f"),
                   num(c.measured.decode_tokens_per_second, "%.1f"), num(c.seconds_per_success, "%.2f"),
                   c.estimates.empty() ? "" : num(c.estimates.front().decode_tokens_per_second, "%.0f"),
                   c.estimates.empty() ? "" : num(c.estimates.front().seconds_per_success, "%.4f")},
                  cw);
    }
    const KvCacheCost& kv = r.runs.front().cost.kv;
    if (!kv.contexts.empty()) {
        std::printf("KV cache per sequence:");
        for (const EvaluationRun& run : r.runs) {
            std::printf("\n  %-16s %s:", run.manifest.label.c_str(), run.cost.kv.format.c_str());
            for (const auto& [tokens, bytes] : run.cost.kv.contexts)
                std::printf(" %lld tokens %.1f MiB;", static_cast<long long>(tokens), bytes / 1048576.0);
        }
        std::printf("\n");
    }
    std::printf("weights layout: %s\n", r.runs.back().cost.weights.layout.c_str());

    std::printf("\nchecklist\n");
    for (const ChecklistEntry& c : t.checklist) std::printf("  [%s] %s: %s\n", c.done ? "x" : " ", c.item.c_str(), c.evidence.c_str());
}

std::vector<int64_t> parse_contexts(const std::string& text) {
    std::vector<int64_t> out;
    for (const std::string& item : split_list(text)) {
        try {
            size_t used = 0;
            const long long v = std::stoll(item, &used);
            if (used != item.size() || v < 1) throw std::invalid_argument(item);
            out.push_back(v);
        } catch (const std::exception&) {
            throw UserError("evalsuite: --contexts must be positive integers, got '" + item + "'");
        }
    }
    return out;
}

std::string file_label(const std::string& label) {
    std::string out;
    for (char c : label) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
    return out;
}

int run(const std::vector<std::string>& args) {
    ArgParser p("evalsuite",
                {"--suite", "--label", "--items", "--categories", "--limit", "--max-tokens", "--samples", "--temperature", "--seed",
                 "--top-k", "--top-p", "--min-p", "--repetition-penalty", "--text", "--text-window", "--text-windows", "--windows", "--gpu",
                 "--estimate-context", "--contexts", "--bootstrap", "--csv-dir", "--save", "--project", "--device", "--lm-eval-export"},
                {"--json", "--allow-mixed-settings"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("evalsuite: missing MODEL (an HF model folder, a GGUF file, a checkpoint or 'demo')");
    EvalSuiteRequest req;
    req.models = p.positional();
    req.labels = p.values("--label");
    req.suite = p.value("--suite").value_or("default");
    req.items = split_list(p.value("--items").value_or(""));
    req.categories = split_list(p.value("--categories").value_or(""));
    req.limit = p.positive_integer("--limit");
    if (p.has("--max-tokens")) req.max_tokens = p.positive_integer("--max-tokens");
    if (p.has("--samples")) req.samples = p.positive_integer("--samples");
    req.temperature = p.number("--temperature", req.samples > 1 ? 0.7 : 0.0);
    req.seed = p.seed();
    req.top_k = p.integer("--top-k", 0);
    req.top_p = p.number("--top-p", 1.0);
    req.min_p = p.number("--min-p", 0.0);
    req.repetition_penalty = p.number("--repetition-penalty", 1.0);
    req.text = p.value("--text").value_or("");
    if (p.has("--text-window")) req.text_window = p.positive_integer("--text-window");
    if (p.has("--text-windows")) req.text_windows = p.positive_integer("--text-windows");
    req.windows = p.value("--windows").value_or("hf");
    if (p.has("--gpu")) req.gpus = p.values("--gpu");
    if (p.has("--estimate-context")) req.estimate_context = p.integer("--estimate-context", 0);
    if (p.has("--contexts")) req.kv_contexts = parse_contexts(*p.value("--contexts"));
    if (p.has("--bootstrap")) req.bootstrap_resamples = p.positive_integer("--bootstrap");
    req.allow_mixed_settings = p.has("--allow-mixed-settings");
    req.device = device_option(p);
    if ((p.has("--text-window") || p.has("--text-windows") || p.has("--windows")) && req.text.empty())
        throw UserError("evalsuite: --text-window, --text-windows and --windows need --text");

    if (const auto folder = p.value("--lm-eval-export")) {
        const LmEvalExportSummary e = export_evalsuite_lm_eval(req, *folder, "quantlab_evalsuite");
        std::fprintf(stderr, "lm-eval tasks for %zu items (group %s, %zu left out) in %s\n", e.exported.size(), e.group.c_str(),
                     e.left_out.size(), folder->c_str());
    }
    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const EvalSuiteResult r = run_evalsuite(req, sink, cancel);
    sink.finish_line();

    std::vector<std::string> saved(r.runs.size());
    if (const auto dir = p.value("--save")) {
        std::error_code ec;
        fs::create_directories(*dir, ec);
        if (ec) throw UserError("evalsuite: cannot create the folder " + *dir + ": " + ec.message());
        for (size_t i = 0; i < r.runs.size(); ++i) {
            if (r.loaded[i]) continue;
            saved[i] = (fs::path(*dir) / (file_label(r.runs[i].manifest.label) + ".json")).string();
            save_evaluation_run(r.runs[i], saved[i]);
        }
    }
    std::vector<std::string> csv;
    if (const auto dir = p.value("--csv-dir")) csv = write_evaluation_csv(r, *dir);
    if (const auto project = p.value("--project")) {
        const nlohmann::json config = {{"suite", req.suite},          {"items", req.items},       {"categories", req.categories},
                                       {"limit", req.limit},          {"max_tokens", req.max_tokens}, {"samples", req.samples},
                                       {"temperature", req.temperature}, {"seed", req.seed},      {"text", req.text},
                                       {"text_window", req.text_window}, {"windows", req.windows}, {"gpus", req.gpus},
                                       {"models", req.models}};
        for (size_t i = 0; i < r.runs.size(); ++i) {
            if (r.loaded[i]) continue;
            const RunManifest& m = r.runs[i].manifest;
            projects::EvalsuiteRunRecord record;
            record.label = m.label;
            record.model_name = m.model;
            record.model_path = m.model_path;
            if (!m.recipe_json.empty()) {
                record.recipe_name = m.quant_scheme;
                record.recipe_json = m.recipe_json;
            }
            nlohmann::json c = config;
            c["model"] = m.model;
            c["baseline"] = r.runs.front().manifest.model;
            record.config_json = c.dump();
            record.run_json = evaluation_run_json(r.runs[i]).dump();
            record.metrics = evaluation_run_metrics(r, i);
            if (!saved[i].empty()) record.artifacts.emplace_back("evalsuite_run", saved[i]);
            projects::record_evalsuite_run(*project, record);
        }
    }
    if (p.has("--json")) {
        nlohmann::ordered_json runs = nlohmann::ordered_json::array();
        for (const EvaluationRun& run : r.runs) runs.push_back(evaluation_run_json(run));
        nlohmann::ordered_json j;
        j["runs"] = std::move(runs);
        j["tables"] = evaluation_tables_json(r.tables);
        j["saved"] = saved;
        j["csv"] = csv;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        print_text(r);
        for (const std::string& s : saved)
            if (!s.empty()) std::printf("saved %s\n", s.c_str());
        if (!csv.empty()) std::printf("wrote %zu CSV tables to %s\n", csv.size(), p.value("--csv-dir")->c_str());
    }
    return 0;
}

}  // namespace

Command evalsuite_command() {
    return Command{"evalsuite", kUsage,
                   "judge models by their answers to an eval suite: success per category, flips against the first model, "
                   "logit metrics, serving cost",
                   run};
}

}  // namespace ql::cli
