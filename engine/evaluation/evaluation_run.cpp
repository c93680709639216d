// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/evaluation_run.h"

#include <cmath>

#include "engine/core/errors.h"
#include "engine/evaluation/json_fields.h"
#include "engine/io/atomic_file.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"

namespace ql::evaluation {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json run_optional(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? ordered_json(*v) : ordered_json(nullptr);
}

}  // namespace

ordered_json evaluation_run_json(const EvaluationRun& run) {
    ordered_json j;
    j["format"] = "quantlab-evaluation-run";
    j["version"] = 1;
    j["manifest"] = manifest_json(run.manifest);
    ordered_json prompts = ordered_json::array();
    for (const SentPrompt& p : run.prompts)
        prompts.push_back({{"id", p.id}, {"user_text", p.user_text}, {"messages", p.messages_json}});
    j["prompts"] = std::move(prompts);
    ordered_json replicates = ordered_json::array();
    for (const ModelEvalReport& r : run.replicates) replicates.push_back(report_json(r));
    j["replicates"] = std::move(replicates);
    if (run.logits) {
        const LogitMetrics& l = *run.logits;
        j["logits"] = {{"text", l.text},
                       {"windows", l.windows},
                       {"window", l.window},
                       {"max_windows", l.max_windows},
                       {"tokens", l.tokens},
                       {"ppl", l.ppl},
                       {"reference", l.reference},
                       {"ppl_reference", run_optional(l.ppl_reference)},
                       {"delta_ppl", run_optional(l.delta_ppl)},
                       {"kl_mean", run_optional(l.kl_mean)},
                       {"kl_p99", run_optional(l.kl_p99)},
                       {"top1_agreement", run_optional(l.top1_agreement)},
                       {"seconds", l.seconds}};
    } else {
        j["logits"] = nullptr;
    }
    j["cost"] = serving_cost_json(run.cost);
    return j;
}

EvaluationRun evaluation_run_from_json(const json& j, const std::string& source) {
    try {
        const JsonFields f(j, "");
        f.only({"format", "version", "manifest", "prompts", "replicates", "logits", "cost"});
        if (f.text("format") != "quantlab-evaluation-run") f.fail("format", "expected \"quantlab-evaluation-run\"");
        if (f.integer("version", 1) != 1) f.fail("version", "expected 1 (written by a newer QuantLab?)");
        EvaluationRun run;
        run.manifest = manifest_from_json(f.get("manifest"), source);
        const json& prompts = f.array("prompts");
        for (size_t i = 0; i < prompts.size(); ++i) {
            const JsonFields p(prompts[i], "prompts[" + std::to_string(i) + "].");
            p.only({"id", "user_text", "messages"});
            run.prompts.push_back({p.text("id"), p.text("user_text"), p.text("messages")});
        }
        const json& replicates = f.array("replicates");
        if (replicates.empty()) f.fail("replicates", "expected at least one replicate");
        for (size_t i = 0; i < replicates.size(); ++i)
            run.replicates.push_back(report_from_json(replicates[i], source + ": replicates[" + std::to_string(i) + "]"));
        for (size_t i = 1; i < run.replicates.size(); ++i)
            if (run.replicates[i].items.size() != run.replicates[0].items.size())
                f.fail("replicates", "replicate " + std::to_string(i) + " holds a different number of items");
        if (f.has("logits")) {
            const JsonFields l = f.object("logits");
            l.only({"text", "windows", "window", "max_windows", "tokens", "ppl", "reference", "ppl_reference", "delta_ppl", "kl_mean", "kl_p99",
                    "top1_agreement", "seconds"});
            LogitMetrics m;
            m.text = l.text("text");
            m.windows = l.text("windows");
            m.window = l.integer("window");
            m.max_windows = l.integer("max_windows");
            m.tokens = l.integer("tokens");
            m.ppl = l.non_negative("ppl");
            m.reference = l.text("reference");
            m.ppl_reference = l.optional_number("ppl_reference");
            m.delta_ppl = l.optional_number("delta_ppl");
            m.kl_mean = l.optional_number("kl_mean");
            m.kl_p99 = l.optional_number("kl_p99");
            m.top1_agreement = l.optional_number("top1_agreement");
            m.seconds = l.non_negative("seconds");
            run.logits = m;
        }
        run.cost = serving_cost_from_json(f.get("cost"), "cost.");
        return run;
    } catch (const JsonFieldError& e) {
        throw UserError(source + ": " + e.field + ": " + e.message);
    }
}

EvaluationRun load_evaluation_run(const std::string& path) {
    const std::string bytes = read_whole_file(path, "evaluation run");
    json j;
    try {
        j = parse_strict_json(bytes.data(), bytes.data() + bytes.size());
    } catch (const StrictJsonError& e) {
        throw UserError(path + ": not an evaluation run (JSON): " + e.what());
    }
    return evaluation_run_from_json(j, path);
}

void save_evaluation_run(const EvaluationRun& run, const std::string& path) {
    write_file_atomically(path, evaluation_run_json(run).dump(1) + "\n");
}

std::vector<double> replicate_success_rates(const EvaluationRun& run) {
    std::vector<double> out;
    for (const ModelEvalReport& r : run.replicates) {
        int64_t passed = 0;
        for (const ItemOutcome& o : r.items) passed += o.passed ? 1 : 0;
        out.push_back(r.items.empty() ? 0.0 : static_cast<double>(passed) / static_cast<double>(r.items.size()));
    }
    return out;
}

}  // namespace ql::evaluation
