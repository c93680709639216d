// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/evaluation_tables.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "engine/core/errors.h"
#include "engine/eval/rank_statistics.h"

namespace ql::evaluation {
namespace {

using nlohmann::ordered_json;

constexpr double kTablesNaN = std::numeric_limits<double>::quiet_NaN();

// Locale-independent shortest round-trip text; empty for NaN / missing.
std::string tables_number(double v) {
    if (!std::isfinite(v)) return "";
    char buffer[64];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof(buffer), v).ptr);
}
std::string tables_number(const std::optional<double>& v) { return v ? tables_number(*v) : std::string(); }
ordered_json tables_json_number(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

bool tables_is_fp(const RunManifest& m) { return m.weight_bits >= 16; }

std::string tables_join(const std::vector<std::string>& v, const std::string& sep) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
    return out;
}

std::string tables_file_label(const std::string& label) {
    std::string out;
    for (char c : label) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
    return out;
}

}  // namespace

std::vector<ChecklistEntry> evaluation_checklist(const std::vector<EvaluationRun>& runs, const EvaluationTables* tables) {
    std::vector<ChecklistEntry> out;
    auto add = [&](const std::string& item, bool done, const std::string& evidence) { out.push_back({item, evidence, done}); };
    if (runs.empty()) {
        for (const char* item : {"fixed eval set with golden + adversarial + tool calling + structured output", "FP vs INT8 vs INT4",
                                 "task success per category", "schema validity", "tool-call accuracy", "hallucination / flips vs FP",
                                 "weights memory", "tokens/s and TTFT", "cost per success",
                                 "model id + quant scheme + framework version recorded"})
            add(item, false, "no run yet");
        return out;
    }
    const ModelEvalReport& first = runs.front().replicates.front();
    int64_t variants = 0, tools = 0, schemas = 0;
    for (const ItemOutcome& o : first.items) {
        variants += o.variant_of.empty() ? 0 : 1;
        tools += o.check == "tool_call" ? 1 : 0;
        schemas += o.check == "json_schema" ? 1 : 0;
    }
    const std::string n_items = std::to_string(first.items.size());
    add("fixed eval set with golden + adversarial + tool calling + structured output", variants > 0 && tools > 0 && schemas > 0,
        n_items + " items checked by program (suite sha256 " + runs.front().manifest.suite_sha256.substr(0, 12) + "): " +
            std::to_string(variants) + " adversarial variants, " + std::to_string(tools) + " tool calls, " + std::to_string(schemas) +
            " JSON-schema answers");

    std::vector<std::string> fp, int8, int4;
    for (const EvaluationRun& r : runs) {
        const double b = r.manifest.weight_bits;
        if (b >= 16) fp.push_back(r.manifest.label);
        else if (b >= 8) int8.push_back(r.manifest.label);
        else if (b <= 4) int4.push_back(r.manifest.label);
    }
    add("FP vs INT8 vs INT4", !fp.empty() && !int8.empty() && !int4.empty() && tables_is_fp(runs.front().manifest),
        "full precision: " + (fp.empty() ? std::string("none") : tables_join(fp, ", ")) + "; 8-bit weights: " +
            (int8.empty() ? std::string("none") : tables_join(int8, ", ")) + "; 4-bit weights: " +
            (int4.empty() ? std::string("none") : tables_join(int4, ", ")) +
            (tables_is_fp(runs.front().manifest) ? "" : " (the baseline is not full precision)"));

    const size_t categories = tables ? (tables->stats.summaries.empty() ? 0 : tables->stats.summaries.front().categories.size()) : 0;
    add("task success per category", categories > 0,
        std::to_string(categories) + " categories with 95 % Wilson intervals, " + std::to_string(runs.size()) + " runs");
    const int64_t json_trials = tables && !tables->stats.summaries.empty() ? tables->stats.summaries.front().json_valid.trials : 0;
    add("schema validity", json_trials > 0, std::to_string(json_trials) + " JSON-schema items per run");
    const int64_t tool_trials = tables && !tables->stats.summaries.empty() ? tables->stats.summaries.front().tool_name.trials : 0;
    add("tool-call accuracy", tool_trials > 0, std::to_string(tool_trials) + " tool-call items per run (name and argument accuracy)");
    const bool flips = runs.size() >= 2 && tables_is_fp(runs.front().manifest) && tables;
    add("hallucination / flips vs FP", flips,
        flips ? std::to_string(tables->flips.size()) + " flipped items over " + std::to_string(runs.size() - 1) +
                    " quantized runs against " + runs.front().manifest.label + " (McNemar, paired bootstrap)"
              : std::string("needs a full-precision first run and at least one more"));
    bool memory = true, speed = true, per_success = false;
    for (const EvaluationRun& r : runs) {
        memory = memory && r.cost.weights.bytes() > 0;
        speed = speed && r.cost.measured.generations > 0 && r.cost.measured.decode_tokens_per_second > 0;
        per_success = per_success || std::isfinite(r.cost.seconds_per_success);
    }
    add("weights memory", memory, memory ? "packed layout bytes per run (" + runs.front().cost.weights.layout + " ...)" : "missing for a run");
    add("tokens/s and TTFT", speed, speed ? "prefill and decode tokens/s and TTFT measured on " + runs.front().cost.measured.device +
                                                "; GPU decode rates are bandwidth estimates"
                                          : "a run has no measured generation");
    add("cost per success", per_success, per_success ? "generation seconds per successful answer" : "no run answered an item right");
    bool recorded = true;
    for (const EvaluationRun& r : runs)
        recorded = recorded && !r.manifest.model_sha256.empty() && !r.manifest.quant_scheme.empty() && !r.manifest.quantlab_version.empty();
    add("model id + quant scheme + framework version recorded", recorded,
        recorded ? "model sha256, quant scheme, chat template sha256, decoding, QuantLab " + runs.front().manifest.quantlab_version +
                       " (" + runs.front().manifest.quantlab_commit.substr(0, 12) + "), LibTorch " + runs.front().manifest.torch_version
                 : std::string("a run lacks its model hash, scheme or version"));
    return out;
}

EvaluationTables compare_runs(const std::vector<EvaluationRun>& runs, const CompareRunsOptions& options) {
    if (runs.empty()) throw UserError("evaluation: no run to compare");
    EvaluationTables t;
    std::set<std::string> labels;
    for (const EvaluationRun& r : runs) {
        if (r.replicates.empty()) throw UserError("evaluation: run " + r.manifest.label + " holds no answers");
        if (!labels.insert(r.manifest.label).second)
            throw UserError("evaluation: two runs are labelled '" + r.manifest.label + "' (give each run its own label)");
        t.models.push_back(r.manifest.label);
    }
    for (size_t i = 1; i < runs.size(); ++i) {
        const std::vector<std::string> problems = comparability_problems(runs.front().manifest, runs[i].manifest);
        if (problems.empty()) continue;
        const std::string text = runs[i].manifest.label + " was run with other settings than " + runs.front().manifest.label + ": " +
                                 tables_join(problems, "; ");
        if (!options.allow_mixed_settings)
            throw UserError("evaluation: " + text + " (refused side by side; allow mixed settings to compare them anyway)");
        t.warnings.push_back(text);
    }
    std::vector<ModelEvalReport> firsts;
    for (const EvaluationRun& r : runs) {
        firsts.push_back(r.replicates.front());
        firsts.back().model = r.manifest.label;
    }
    t.stats = compare(firsts, options.bootstrap);
    for (const EvaluationRun& r : runs) {
        ReplicateSpread s;
        s.model = r.manifest.label;
        const std::vector<double> rates = replicate_success_rates(r);
        s.rates = experiments::mean_interval(rates, options.bootstrap.confidence);
        s.min_rate = *std::min_element(rates.begin(), rates.end());
        s.max_rate = *std::max_element(rates.begin(), rates.end());
        t.spreads.push_back(s);
    }
    // Flips with their outputs, in suite order within each run.
    const ModelEvalReport& base = firsts.front();
    std::map<std::string, size_t> base_index;
    for (size_t i = 0; i < base.items.size(); ++i) base_index[base.items[i].id] = i;
    std::map<std::string, const SentPrompt*> prompt_of;
    for (const SentPrompt& p : runs.front().prompts) prompt_of[p.id] = &p;
    for (size_t m = 1; m < firsts.size(); ++m)
        for (const ItemOutcome& o : firsts[m].items) {
            const ItemOutcome& b = base.items[base_index.at(o.id)];
            if (o.passed == b.passed) continue;
            FlipRow f;
            f.model = firsts[m].model;
            f.baseline = base.model;
            f.category = o.category;
            f.id = o.id;
            f.direction = b.passed ? "right_to_wrong" : "wrong_to_right";
            f.baseline_output = b.output;
            f.model_output = o.output;
            if (const auto it = prompt_of.find(o.id); it != prompt_of.end()) {
                f.user_text = it->second->user_text;
                f.messages_json = it->second->messages_json;
            }
            t.flips.push_back(std::move(f));
        }
    // How each logit metric orders the runs against their right-to-wrong flips.
    const std::vector<std::string> metrics = {"delta_ppl", "kl_mean", "kl_p99", "top1_disagreement"};
    for (const std::string& metric : metrics) {
        FlipPredictor p;
        p.metric = metric;
        for (size_t m = 1; m < runs.size(); ++m) {
            const std::optional<LogitMetrics>& l = runs[m].logits;
            std::optional<double> v;
            if (l && metric == "delta_ppl") v = l->delta_ppl;
            if (l && metric == "kl_mean") v = l->kl_mean;
            if (l && metric == "kl_p99") v = l->kl_p99;
            if (l && metric == "top1_disagreement" && l->top1_agreement) v = 1.0 - *l->top1_agreement;
            if (!v) continue;
            p.values.push_back(*v);
            p.flips.push_back(static_cast<double>(t.stats.comparisons[m - 1].overall.right_to_wrong));
        }
        p.spearman = p.values.size() >= 3 ? spearman_correlation(p.values, p.flips) : kTablesNaN;
        if (!p.values.empty()) t.predictors.push_back(std::move(p));
    }
    t.checklist = evaluation_checklist(runs, &t);
    return t;
}

ordered_json evaluation_tables_json(const EvaluationTables& t) {
    ordered_json j;
    j["models"] = t.models;
    j["comparison"] = comparison_json(t.stats);
    ordered_json spreads = ordered_json::array();
    for (const ReplicateSpread& s : t.spreads)
        spreads.push_back({{"model", s.model},
                           {"replicates", s.rates.n},
                           {"mean_rate", s.rates.mean},
                           {"ci_low", tables_json_number(s.rates.ci.low)},
                           {"ci_high", tables_json_number(s.rates.ci.high)},
                           {"min_rate", s.min_rate},
                           {"max_rate", s.max_rate}});
    j["replicates"] = std::move(spreads);
    ordered_json flips = ordered_json::array();
    for (const FlipRow& f : t.flips)
        flips.push_back({{"model", f.model},
                         {"baseline", f.baseline},
                         {"category", f.category},
                         {"id", f.id},
                         {"direction", f.direction},
                         {"baseline_output", f.baseline_output},
                         {"model_output", f.model_output},
                         {"prompt", f.user_text}});
    j["flips"] = std::move(flips);
    ordered_json predictors = ordered_json::array();
    for (const FlipPredictor& p : t.predictors)
        predictors.push_back({{"metric", p.metric}, {"spearman", tables_json_number(p.spearman)}, {"values", p.values}, {"flips", p.flips}});
    j["flip_predictors"] = std::move(predictors);
    ordered_json checklist = ordered_json::array();
    for (const ChecklistEntry& c : t.checklist) checklist.push_back({{"item", c.item}, {"done", c.done}, {"evidence", c.evidence}});
    j["checklist"] = std::move(checklist);
    j["warnings"] = t.warnings;
    return j;
}

std::string flip_outputs_csv(const EvaluationTables& t) {
    std::string out = "model,baseline,category,id,direction,baseline_output,model_output,prompt\n";
    for (const FlipRow& f : t.flips)
        out += csv_field(f.model) + "," + csv_field(f.baseline) + "," + csv_field(f.category) + "," + csv_field(f.id) + "," +
               f.direction + "," + csv_field(f.baseline_output) + "," + csv_field(f.model_output) + "," + csv_field(f.user_text) + "\n";
    return out;
}

std::string replicates_csv(const EvaluationTables& t) {
    std::string out = "model,replicates,mean_rate,ci_low,ci_high,min_rate,max_rate\n";
    for (const ReplicateSpread& s : t.spreads)
        out += csv_field(s.model) + "," + std::to_string(s.rates.n) + "," + tables_number(s.rates.mean) + "," +
               tables_number(s.rates.ci.low) + "," + tables_number(s.rates.ci.high) + "," + tables_number(s.min_rate) + "," +
               tables_number(s.max_rate) + "\n";
    return out;
}

std::string logits_csv(const std::vector<EvaluationRun>& runs) {
    std::string out = "model,text,windows,window,tokens,ppl,reference,ppl_reference,delta_ppl,kl_mean,kl_p99,top1_agreement\n";
    for (const EvaluationRun& r : runs) {
        if (!r.logits) continue;
        const LogitMetrics& l = *r.logits;
        out += csv_field(r.manifest.label) + "," + csv_field(l.text) + "," + l.windows + "," + std::to_string(l.window) + "," +
               std::to_string(l.tokens) + "," + tables_number(l.ppl) + "," + csv_field(l.reference) + "," +
               tables_number(l.ppl_reference) + "," + tables_number(l.delta_ppl) + "," + tables_number(l.kl_mean) + "," +
               tables_number(l.kl_p99) + "," + tables_number(l.top1_agreement) + "\n";
    }
    return out;
}

std::string predictors_csv(const EvaluationTables& t) {
    std::string out = "metric,spearman,values,flips\n";
    for (const FlipPredictor& p : t.predictors) {
        std::string values, flips;
        for (size_t i = 0; i < p.values.size(); ++i) {
            values += (i ? "|" : "") + tables_number(p.values[i]);
            flips += (i ? "|" : "") + tables_number(p.flips[i]);
        }
        out += p.metric + "," + tables_number(p.spearman) + "," + csv_field(values) + "," + csv_field(flips) + "\n";
    }
    return out;
}

std::string cost_csv(const std::vector<EvaluationRun>& runs) {
    std::string out =
        "model,quant_scheme,weight_bytes,bits_per_parameter,code_bytes,scale_bytes,global_scale_bytes,high_precision_bytes,layout,"
        "kv_format,kv_bytes_per_token,prefill_tokens_per_second,ttft_mean_s,ttft_p50_s,decode_tokens_per_second,device,successes,"
        "trials,seconds_per_success\n";
    for (const EvaluationRun& r : runs) {
        const ServingCost& c = r.cost;
        out += csv_field(r.manifest.label) + "," + csv_field(r.manifest.quant_scheme) + "," + std::to_string(c.weights.bytes()) + "," +
               tables_number(c.weights.bits_per_parameter()) + "," + std::to_string(c.weights.code_bytes) + "," +
               std::to_string(c.weights.scale_bytes) + "," + std::to_string(c.weights.global_scale_bytes) + "," +
               std::to_string(c.weights.high_precision_bytes) + "," + csv_field(c.weights.layout) + "," + csv_field(c.kv.format) + "," +
               tables_number(c.kv.bytes_per_token) + "," + tables_number(c.measured.prefill_tokens_per_second) + "," +
               tables_number(c.measured.ttft_mean_s) + "," + tables_number(c.measured.ttft_p50_s) + "," +
               tables_number(c.measured.decode_tokens_per_second) + "," + csv_field(c.measured.device) + "," +
               std::to_string(c.successes) + "," + std::to_string(c.trials) + "," + tables_number(c.seconds_per_success) + "\n";
    }
    return out;
}

std::string kv_csv(const std::vector<EvaluationRun>& runs) {
    std::string out = "model,kv_format,context,bytes\n";
    for (const EvaluationRun& r : runs)
        for (const auto& [tokens, bytes] : r.cost.kv.contexts)
            out += csv_field(r.manifest.label) + "," + csv_field(r.cost.kv.format) + "," + std::to_string(tokens) + "," +
                   tables_number(bytes) + "\n";
    return out;
}

std::string estimates_csv(const std::vector<EvaluationRun>& runs) {
    std::string out = "model,gpu,bandwidth_bytes_per_s,context,bytes_per_token,estimated_decode_tokens_per_second,"
                      "estimated_seconds_per_success\n";
    for (const EvaluationRun& r : runs)
        for (const GpuEstimate& e : r.cost.estimates)
            out += csv_field(r.manifest.label) + "," + csv_field(e.gpu) + "," + tables_number(e.bandwidth_bytes_per_s) + "," +
                   std::to_string(e.context) + "," + tables_number(e.bytes_per_token) + "," +
                   tables_number(e.decode_tokens_per_second) + "," + tables_number(e.seconds_per_success) + "\n";
    return out;
}

std::string manifest_csv(const std::vector<EvaluationRun>& runs) {
    std::string out = "model,field,value\n";
    for (const EvaluationRun& r : runs) {
        const ordered_json j = manifest_json(r.manifest);
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (it.key() == "item_ids") {
                out += csv_field(r.manifest.label) + ",items," + std::to_string(r.manifest.item_ids.size()) + "\n";
                continue;
            }
            if (it->is_object()) {
                for (auto sub = it->begin(); sub != it->end(); ++sub)
                    out += csv_field(r.manifest.label) + "," + it.key() + "." + sub.key() + "," +
                           csv_field(sub->is_string() ? sub->get<std::string>() : sub->dump()) + "\n";
                continue;
            }
            out += csv_field(r.manifest.label) + "," + it.key() + "," + csv_field(it->is_string() ? it->get<std::string>() : it->dump()) +
                   "\n";
        }
    }
    return out;
}

std::string checklist_csv(const std::vector<ChecklistEntry>& checklist) {
    std::string out = "item,done,evidence\n";
    for (const ChecklistEntry& c : checklist) out += csv_field(c.item) + "," + (c.done ? "1" : "0") + "," + csv_field(c.evidence) + "\n";
    return out;
}

std::vector<std::pair<std::string, std::string>> evaluation_csv_files(const std::vector<EvaluationRun>& runs, const EvaluationTables& t) {
    std::vector<std::pair<std::string, std::string>> files = {
        {"summary.csv", summary_csv(t.stats)},       {"paired.csv", paired_csv(t.stats)},
        {"flips.csv", flips_csv(t.stats)},           {"flip_outputs.csv", flip_outputs_csv(t)},
        {"replicates.csv", replicates_csv(t)},       {"logits.csv", logits_csv(runs)},
        {"predictors.csv", predictors_csv(t)},       {"cost.csv", cost_csv(runs)},
        {"kv_cache.csv", kv_csv(runs)},              {"estimates.csv", estimates_csv(runs)},
        {"manifest.csv", manifest_csv(runs)},        {"checklist.csv", checklist_csv(t.checklist)},
    };
    for (size_t i = 0; i < runs.size(); ++i)
        files.emplace_back("items_" + std::to_string(i + 1) + "_" + tables_file_label(runs[i].manifest.label) + ".csv",
                           report_items_csv(runs[i].replicates.front()));
    return files;
}

}  // namespace ql::evaluation
