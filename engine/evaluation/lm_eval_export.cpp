// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/lm_eval_export.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "engine/core/errors.h"
#include "engine/evaluation/eval_checker.h"
#include "engine/io/atomic_file.h"

namespace ql::evaluation {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// lm-eval's regexes_to_ignore (Python re, applied in order to output and target alike, before
// ignore_case) for our exact normalisations: White_Space at the ends, then White_Space and ASCII
// punctuation (string.punctuation, as ranges) at the ends.
const std::vector<std::string> kLmEvalStrip = {"^\\s+", "\\s+$"};
const std::vector<std::string> kLmEvalStripPunctuation = {"^[\\s!-/:-@\\[-`{-~]+", "[\\s!-/:-@\\[-`{-~]+$"};
// Numeric: thousands commas, and a fraction of zeros (ours compares 12.0 == 12 by value).
const std::vector<std::string> kLmEvalNumberIgnore = {",", "\\.0+$"};

// YAML double-quoted scalars take JSON's escapes, so a JSON string is a valid YAML string.
std::string lm_eval_yaml_string(const std::string& s) { return json(s).dump(); }

struct LmEvalTask {
    std::string name;
    std::string kind;  // exact, numeric, regex
    int64_t max_tokens = 0;
    std::vector<std::string> ignore;  // regexes_to_ignore
    bool ignore_case = false;
    std::string filter_pattern;  // numeric, regex
    int group_select = 0;
    std::string jsonl;           // the documents
};

std::string lm_eval_task_yaml(const LmEvalTask& t, const std::string& jsonl_path) {
    std::string y;
    y += "# Written by QuantLab (docs/EVAL_SUITES.md \"lm-eval export\"); run the group with --apply_chat_template.\n";
    y += "task: " + t.name + "\n";
    y += "dataset_path: json\n";
    y += "dataset_kwargs:\n  data_files:\n    test: " + lm_eval_yaml_string(jsonl_path) + "\n";
    y += "test_split: test\n";
    y += "output_type: generate_until\n";
    y += "doc_to_text: \"{{prompt}}\"\n";
    y += "doc_to_target: \"{{target}}\"\n";
    y += "description: \"{{system}}\"\n";
    y += "generation_kwargs:\n  until: []\n  max_gen_toks: " + std::to_string(t.max_tokens) + "\n  do_sample: false\n  temperature: 0.0\n";
    y += "filter_list:\n  - name: quantlab\n    filter:\n";
    if (t.kind != "exact") {
        y += "      - function: regex\n        regex_pattern: " + lm_eval_yaml_string(t.filter_pattern) + "\n";
        y += "        group_select: " + std::to_string(t.group_select) + "\n        fallback: \"[invalid]\"\n";
    }
    if (t.kind == "regex") y += "      - function: map\n        mapping_dict: {\"[invalid]\": \"0\"}\n        default_value: \"1\"\n";
    y += "      - function: take_first\n";
    y += "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n";
    y += std::string("    ignore_case: ") + (t.ignore_case ? "true" : "false") + "\n";
    if (!t.ignore.empty()) {
        y += "    regexes_to_ignore:\n";
        for (const auto& r : t.ignore) y += "      - " + lm_eval_yaml_string(r) + "\n";
    }
    y += "metadata:\n  version: 1.0\n";
    return y;
}

// The (system, user) texts of a conversation lm-eval can reproduce: one user message, optionally
// after one system message, plain contents only. Empty reason when it can.
std::string lm_eval_conversation(const EvalItem& item, std::string& system, std::string& user) {
    if (item.prompt) {
        user = *item.prompt;
        return "";
    }
    const ordered_json& m = item.messages;
    const bool with_system = m.size() == 2 && m[0]["role"] == "system";
    if (!(m.size() == 1 || with_system) || m.back()["role"] != "user")
        return "conversation: lm-eval prompts one user message (after at most one system message)";
    for (const auto& message : m)
        if (message.size() != 2 || !message["content"].is_string())
            return "conversation: a message with more than role and content";
    if (with_system) system = m[0]["content"].get<std::string>();
    user = m.back()["content"].get<std::string>();
    return "";
}

}  // namespace

LmEvalExport export_lm_eval_tasks(const EvalSuite& suite, const std::string& out_dir, const std::string& group,
                                  int64_t default_max_tokens) {
    if (group.empty() || group.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
        throw UserError("lm-eval export: the group name '" + group + "' must be letters, digits and _");
    if (default_max_tokens < 1) throw UserError("lm-eval export: the default max_tokens must be at least 1");
    LmEvalExport out;
    out.group = group;
    std::vector<LmEvalTask> tasks;
    std::map<std::string, size_t> task_of_key;
    std::map<std::string, int> regex_index;
    for (const EvalItem& item : suite.items) {
        std::string system, user, why;
        if (!item.tools.is_null()) why = "tools: lm-eval passes no tools to the chat template";
        if (why.empty()) why = lm_eval_conversation(item, system, user);
        LmEvalTask t;
        t.max_tokens = item.max_tokens.value_or(default_max_tokens);
        std::string key, target;
        if (why.empty()) {
            if (const auto* e = std::get_if<ExactCheck>(&item.check)) {
                t.kind = "exact";
                if (e->strip) t.ignore = kLmEvalStrip;
                if (e->strip_punctuation) t.ignore.insert(t.ignore.end(), kLmEvalStripPunctuation.begin(), kLmEvalStripPunctuation.end());
                t.ignore_case = e->lowercase;
                key = std::string("exact") + (e->strip ? "_strip" : "") + (e->strip_punctuation ? "_punct" : "") + (e->lowercase ? "_lower" : "");
                target = e->answer;
            } else if (const auto* n = std::get_if<NumericCheck>(&item.check)) {
                if (n->tolerance != 0 || n->value != std::floor(n->value) || std::fabs(n->value) > 1e15) {
                    why = "numeric: only integer answers with tolerance 0 (lm-eval compares the number as text)";
                } else {
                    t.kind = "numeric";
                    t.filter_pattern = kNumberPattern;
                    t.group_select = n->last ? -1 : 0;
                    t.ignore = kLmEvalNumberIgnore;
                    key = std::string("numeric_") + (n->last ? "last" : "first");
                    target = std::to_string(static_cast<long long>(n->value));
                }
            } else if (const auto* r = std::get_if<RegexCheck>(&item.check)) {
                t.kind = "regex";
                t.filter_pattern = r->pattern;
                const auto [it, fresh] = regex_index.emplace(r->pattern, static_cast<int>(regex_index.size()) + 1);
                key = "regex" + std::to_string(it->second);
                target = "1";
            } else {
                why = "check " + check_type(item.check) + ": no lm-eval filter and metric reproduce it";
            }
        }
        if (!why.empty()) {
            out.left_out.emplace_back(item.id, why);
            continue;
        }
        key += "_" + std::to_string(t.max_tokens);
        auto found = task_of_key.find(key);
        if (found == task_of_key.end()) {
            t.name = group + "_" + key;
            found = task_of_key.emplace(key, tasks.size()).first;
            tasks.push_back(t);
        }
        ordered_json doc;
        doc["id"] = item.id;
        doc["category"] = item.category;
        doc["system"] = system;
        doc["prompt"] = user;
        doc["target"] = target;
        tasks[found->second].jsonl += doc.dump() + "\n";
        out.exported_ids.push_back(item.id);
    }
    if (tasks.empty()) throw UserError("lm-eval export of " + suite.source + ": no item has a check lm-eval can reproduce");

    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw UserError(out_dir + ": cannot create the folder: " + ec.message());
    const std::filesystem::path dir = std::filesystem::absolute(out_dir);
    std::string group_yaml = "# Written by QuantLab from " + suite.source + " (sha256 " + suite.sha256 + ").\ngroup: " + group + "\ntask:\n";
    for (const auto& t : tasks) {
        const std::string jsonl = t.name + ".jsonl", yaml = t.name + ".yaml";
        write_file_atomically((dir / jsonl).string(), t.jsonl);
        write_file_atomically((dir / yaml).string(), lm_eval_task_yaml(t, (dir / jsonl).string()));
        out.files.push_back(yaml);
        out.files.push_back(jsonl);
        out.tasks.push_back(t.name);
        group_yaml += "  - " + t.name + "\n";
    }
    group_yaml +=
        "aggregate_metric_list:\n  - metric: exact_match\n    aggregation: mean\n    weight_by_size: true\n    filter_list: quantlab\n"
        "metadata:\n  version: 1.0\n";
    write_file_atomically((dir / (group + ".yaml")).string(), group_yaml);
    out.files.push_back(group + ".yaml");
    std::string tsv = "id\treason\n";
    for (const auto& [id, reason] : out.left_out) tsv += id + "\t" + reason + "\n";
    write_file_atomically((dir / (group + "_left_out.tsv")).string(), tsv);
    out.files.push_back(group + "_left_out.tsv");
    return out;
}

}  // namespace ql::evaluation
