// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/suite_runner.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "engine/core/engine_runtime.h"
#include "engine/core/errors.h"
#include "engine/evaluation/eval_checker.h"
#include "engine/evaluation/tool_prompt.h"
#include "engine/evaluation/weight_memory.h"
#include "engine/export/gguf_type_mix.h"
#include "engine/generation/chat_prompt.h"
#include "engine/generation/text_generator.h"
#include "engine/text/chat_template.h"

namespace ql::evaluation {
namespace {

using nlohmann::ordered_json;

// Markers no template writes on its own.
constexpr const char* kRunnerUserMarker = "\x01quantlab-user\x01";
constexpr const char* kRunnerSystemMarker = "\x01quantlab-system\x01";

std::string runner_chat_render(const ModelText& text, const ordered_json& messages, const ordered_json& tools) {
    return chat_prompt(text, messages, tools).rendered;
}

std::string runner_gguf_file_type(const GgufSource& g) {
    if (const GgufValue* v = g.file->find("general.file_type"); v && v->type != GgufValueType::STRING && v->type != GgufValueType::ARRAY) {
        try {
            const GgufFileType* t = find_gguf_file_type(static_cast<uint32_t>(v->as_uint("general.file_type")));
            if (t) return t->llama_name;
        } catch (const UserError&) {
        }
    }
    return "file";
}

// The user message's text an item ends with (the Generate view's prompt).
std::string runner_last_user_text(const ordered_json& conversation) {
    for (auto it = conversation.rbegin(); it != conversation.rend(); ++it)
        if ((*it)["role"] == "user" && (*it).contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
    return "";
}

struct RunnerPrompt {
    std::vector<int64_t> ids;
    ordered_json conversation;
};

}  // namespace

std::string template_default_system(const ModelText& text) {
    const ordered_json user = ordered_json::array({ordered_json{{"role", "user"}, {"content", kRunnerUserMarker}}});
    const ordered_json with_system = ordered_json::array(
        {ordered_json{{"role", "system"}, {"content", kRunnerSystemMarker}}, ordered_json{{"role", "user"}, {"content", kRunnerUserMarker}}});
    const std::string plain = runner_chat_render(text, user, nullptr);
    const std::string marked = runner_chat_render(text, with_system, nullptr);
    const size_t at = marked.find(kRunnerSystemMarker);
    if (at == std::string::npos) return "";
    const std::string before = marked.substr(0, at), after = marked.substr(at + std::char_traits<char>::length(kRunnerSystemMarker));
    // The plain rendering must be the marked one with the marker replaced by the default.
    if (plain.size() < before.size() + after.size() || plain.compare(0, before.size(), before) != 0 ||
        plain.compare(plain.size() - after.size(), after.size(), after) != 0)
        return "";
    return plain.substr(before.size(), plain.size() - before.size() - after.size());
}

bool template_renders_tools(const ModelText& text, const ordered_json& conversation, const ordered_json& tools) {
    return runner_chat_render(text, conversation, tools) != runner_chat_render(text, conversation, nullptr);
}

std::string default_run_label(const OpenedModel& m) {
    if (m.adapters) return (m.quantization ? m.quantization->recipe().name : std::string("fp")) + " + " + m.adapter_summary;
    if (m.is_demo && !m.quantization) return "demo";
    if (m.quantization) return m.quantization->recipe().name;
    if (m.gguf) return "gguf " + runner_gguf_file_type(*m.gguf);
    return "fp";
}

void validate_suite_run(const SuiteRunSettings& s, const EvalSuite& suite) {
    validate_sampling(s.sampling);
    if (s.max_tokens < 1) throw UserError("evalsuite: max tokens must be at least 1");
    if (s.samples < 1) throw UserError("evalsuite: samples must be at least 1");
    if (s.samples > 1 && s.sampling.greedy())
        throw UserError("evalsuite: " + std::to_string(s.samples) + " samples of a greedy run would all be the same: give a temperature > 0");
    for (const std::string& id : s.item_ids)
        if (!suite.find(id)) throw UserError("evalsuite: " + suite.source + " has no item '" + id + "'");
    for (const std::string& g : s.gpus) find_gpu(g);
    for (int64_t c : s.kv_contexts)
        if (c < 1) throw UserError("evalsuite: a KV-cache context must be at least 1 token");
    if (s.estimate_context < 0) throw UserError("evalsuite: the estimate's context must not be negative");
}

EvaluationRun run_suite(OpenedModel& m, const std::string& model_arg, const EvalSuite& suite, const SuiteRunSettings& s, JobSink& sink,
                        const CancellationToken& cancel, const ItemCallback& on_item) {
    validate_suite_run(s, suite);
    if (!m.model->generates_text())
        throw UserError("evalsuite: " + m.path + " is a " + m.model->config().model_type + " model, not a decoder: it does not generate text");
    if (!m.text.has_text()) throw UserError("evalsuite: " + m.path + " has no tokenizer (tokenizer.json or tokenizer.ggml.*)");
    const auto started = std::chrono::steady_clock::now();

    std::vector<const EvalItem*> items;
    if (s.item_ids.empty()) {
        for (const EvalItem& item : suite.items) items.push_back(&item);
    } else {
        const std::set<std::string> wanted(s.item_ids.begin(), s.item_ids.end());
        for (const EvalItem& item : suite.items)
            if (wanted.count(item.id)) items.push_back(&item);
    }

    EvaluationRun run;
    RunManifest& mf = run.manifest;
    mf.label = s.label.empty() ? default_run_label(m) : s.label;
    mf.model = model_arg;
    mf.model_path = std::filesystem::absolute(m.path).lexically_normal().string();
    mf.model_kind = m.adapters ? "lora run" : m.gguf ? "gguf" : m.quantization ? "quantized checkpoint" : m.is_demo ? "demo" : "hf folder";
    mf.model_sha256 = content_sha256(m.path);
    mf.quant_scheme = m.quantization ? m.quantization->recipe().name : m.gguf ? "gguf " + runner_gguf_file_type(*m.gguf) : "fp";
    if (m.adapters) mf.quant_scheme += " + " + m.adapter_summary;
    mf.quant_formats = describe_quant_formats(m);
    mf.weight_bits = weight_element_bits(m);
    mf.recipe_json = m.quantization ? recipe_to_json(m.quantization->recipe()) : "";
    const bool chat = m.text.chat_template.has_value();
    mf.prompt_format = chat ? "chat template" : "plain";
    if (chat) {
        mf.chat_template_sha256 = ChatTemplate::parse(*m.text.chat_template, m.text.chat_template_origin).sha256();
        mf.chat_template_origin = m.text.chat_template_origin;
    }
    const EvalItem* tool_item = nullptr;
    for (const EvalItem* item : items)
        if (!item->tools.is_null() && !tool_item) tool_item = item;
    if (tool_item) {
        if (!chat)
            throw UserError("evalsuite: item " + tool_item->id + " offers tools, and " + m.path +
                            " has no chat template to offer them with");
        mf.tools_mode = template_renders_tools(m.text, tool_item->conversation(), tool_item->tools) ? "template" : "system message";
        if (mf.tools_mode == "system message") mf.default_system = template_default_system(m.text);
    }
    DecodingManifest& d = mf.decoding;
    d.max_tokens = s.max_tokens;
    d.temperature = s.sampling.temperature;
    d.top_k = s.sampling.top_k;
    d.top_p = s.sampling.top_p;
    d.min_p = s.sampling.min_p;
    d.repetition_penalty = s.sampling.repetition_penalty;
    d.samples = s.samples;
    d.seed = s.sampling.seed;
    d.description = describe_sampling(s.sampling) + (s.samples > 1 ? ", " + std::to_string(s.samples) + " samples per item" : "");
    mf.suite = suite.source;
    mf.suite_sha256 = suite.sha256;
    for (const EvalItem* item : items) mf.item_ids.push_back(item->id);
    const RuntimeInfo rt = initialise_engine_runtime();
    mf.quantlab_version = rt.quantlab_version;
    mf.quantlab_commit = quantlab_source_commit();
    mf.torch_version = rt.torch_version;
    mf.device = s.device;
    mf.threads = rt.threads;
    mf.started_at = utc_timestamp();

    // Prompts, rendered once for all replicates.
    std::vector<RunnerPrompt> prompts;
    for (const EvalItem* item : items) {
        RunnerPrompt p;
        if (chat) {
            const bool fold = !item->tools.is_null() && mf.tools_mode == "system message";
            p.conversation = fold ? conversation_with_tools_in_system(*item, mf.default_system) : item->conversation();
            p.ids = chat_prompt(m.text, p.conversation, fold ? ordered_json(nullptr) : item->tools).ids;
        } else {
            p.conversation = item->conversation();
            if (p.conversation.size() != 1)
                throw UserError("evalsuite: item " + item->id + " is a conversation of " + std::to_string(p.conversation.size()) +
                                " messages, and " + m.path + " has no chat template to render it (plain prompts are one user message)");
            p.ids = m.text.encode_prompt(p.conversation[0]["content"].get<std::string>());
        }
        if (p.ids.empty()) throw UserError("evalsuite: item " + item->id + "'s prompt gives no tokens");
        run.prompts.push_back({item->id, runner_last_user_text(p.conversation), p.conversation.dump()});
        prompts.push_back(std::move(p));
    }

    const int64_t n = static_cast<int64_t>(items.size());
    const int64_t own_total = n * s.samples;
    const int64_t total = s.progress_total > 0 ? s.progress_total : own_total;
    std::vector<GenerationTiming> timings;
    int64_t done = 0;
    sink.progress(s.progress_offset, total, "evalsuite");
    for (int64_t r = 0; r < s.samples; ++r) {
        ModelEvalReport report;
        report.model = mf.label;
        report.suite = suite.source;
        report.suite_sha256 = suite.sha256;
        report.settings = manifest_json(mf)["decoding"];
        report.settings["replicate"] = r;
        for (int64_t i = 0; i < n; ++i) {
            cancel.throw_if_cancelled();
            const EvalItem& item = *items[static_cast<size_t>(i)];
            GenerationSettings g;
            g.max_new_tokens = item.max_tokens.value_or(s.max_tokens);
            g.sampling = s.sampling;
            // Each item and replicate its own stream of draws (the sampler's draws depend on the seed and step only).
            g.sampling.seed = s.sampling.seed + static_cast<uint64_t>(r * n + i);
            g.alternatives = 0;
            const GenerationResult result =
                generate_text(*m.model, m.text, prompts[static_cast<size_t>(i)].ids, g, {}, cancel);
            ItemOutcome outcome = check(item, result.text);
            outcome.tokens_generated = static_cast<int64_t>(result.tokens.size());
            outcome.seconds = result.prefill_seconds + result.decode_seconds;
            timings.push_back({static_cast<int64_t>(result.prompt_ids.size()), outcome.tokens_generated, result.prefill_seconds,
                               result.decode_seconds});
            if (on_item) on_item(r, outcome);
            report.items.push_back(std::move(outcome));
            sink.progress(s.progress_offset + ++done, total, "evalsuite");
        }
        run.replicates.push_back(std::move(report));
    }

    ServingCost& c = run.cost;
    c.weights = measure_weight_memory(m);
    c.kv = measure_kv_cache(m, s.kv_contexts);
    c.measured = measured_speed(timings, s.device + " (" + std::to_string(rt.threads) + " threads)");
    int64_t success_tokens = 0;
    for (const ModelEvalReport& rep : run.replicates)
        for (const ItemOutcome& o : rep.items) {
            c.successes += o.passed ? 1 : 0;
            ++c.trials;
            success_tokens += o.tokens_generated;
        }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    c.seconds_per_success = c.successes ? (c.measured.prefill_seconds + c.measured.decode_seconds) / static_cast<double>(c.successes) : nan;
    // Tokens generated (all answers, right or wrong) per successful answer: what a success costs in decode steps.
    const double tokens_per_success = c.successes ? static_cast<double>(success_tokens) / static_cast<double>(c.successes) : nan;
    for (const std::string& gpu : s.gpus) c.estimates.push_back(estimate_decode(c.weights, c.kv, find_gpu(gpu), s.estimate_context, tokens_per_success));
    mf.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return run;
}

}  // namespace ql::evaluation
