// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/generate_api.h"

#include <nlohmann/json.hpp>

#include <numeric>

#include "engine/core/errors.h"
#include "engine/generation/chat_prompt.h"
#include "engine/generation/generation_divergence.h"
#include "engine/generation/text_generator.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"

namespace ql {
namespace {

struct PreparedPrompt {
    std::vector<int64_t> ids;
    std::string rendered, template_sha256;
};

PreparedPrompt prepare_prompt(const OpenedModel& m, const GenerateRequest& req, const GeneratePrompt& p) {
    PreparedPrompt out;
    if (!p.messages_json.empty() || req.chat) {
        nlohmann::ordered_json messages;
        if (!p.messages_json.empty()) {
            try {
                messages = nlohmann::ordered_json::parse(p.messages_json);
            } catch (const nlohmann::json::exception& e) {
                throw UserError(std::string("generate: chat messages are not valid JSON: ") + e.what());
            }
        } else {
            messages = user_turn(p.text, req.system);
        }
        const ChatPrompt chat = chat_prompt(m.text, messages);
        out.ids = chat.ids;
        out.rendered = chat.rendered;
        out.template_sha256 = chat.template_sha256;
    } else {
        out.ids = m.text.encode_prompt(p.text);
        out.rendered = p.text;
    }
    if (out.ids.empty()) throw UserError("generate: the prompt '" + p.text + "' gives no tokens");
    return out;
}

GeneratedTokenInfo generated_token_info(const OpenedModel& m, const GeneratedToken& t) {
    GeneratedTokenInfo info;
    info.id = t.id;
    info.text = t.text;
    info.probability = t.probability;
    for (const TokenProbability& a : t.alternatives) info.alternatives.emplace_back(m.text.decode({a.id}), a.probability);
    return info;
}

OpenedModel open_text_model(const std::string& path, at::Device device) {
    OpenedModel m = open_model(path);
    if (!m.model->generates_text())
        throw UserError("generate: " + m.path + " is a " + m.model->config().model_type + " model, not a decoder: it does not "
                        "generate text");
    if (!m.text.has_text()) throw UserError("generate: " + m.path + " has no tokenizer (tokenizer.json or tokenizer.ggml.*)");
    move_opened_model(m, device);
    return m;
}

}  // namespace

GenerateReport run_generate(const GenerateRequest& req, JobSink& sink, const CancellationToken& cancel,
                            const GenerateStream& stream) {
    if (req.models.empty()) throw UserError("generate: no model given");
    if (req.prompts.empty()) throw UserError("generate: no prompt given (--prompt or --prompts)");
    GenerationSettings settings;
    settings.max_new_tokens = req.max_new_tokens;
    settings.sampling.temperature = req.temperature;
    settings.sampling.top_k = req.top_k;
    settings.sampling.top_p = req.top_p;
    settings.sampling.min_p = req.min_p;
    settings.sampling.repetition_penalty = req.repetition_penalty;
    settings.sampling.seed = req.seed;
    settings.stop_strings = req.stop;
    settings.alternatives = req.alternatives;
    validate_generation(settings);
    const at::Device device = torch_device(req.device);

    GenerateReport report;
    report.sampling = describe_sampling(settings.sampling);
    const int64_t total = static_cast<int64_t>(req.models.size() * req.prompts.size());
    sink.progress(0, total, "generate");
    OpenedModel reference;
    std::vector<GenerationResult> reference_results;
    for (size_t mi = 0; mi < req.models.size(); ++mi) {
        cancel.throw_if_cancelled();
        OpenedModel opened = open_text_model(req.models[mi], device);
        OpenedModel& m = mi == 0 ? reference : opened;
        if (mi == 0) reference = std::move(opened);
        else if (m.model->config().vocab_size != reference.model->config().vocab_size)
            throw UserError("generate: " + m.path + " has " + std::to_string(m.model->config().vocab_size) + " tokens, " +
                            reference.path + " " + std::to_string(reference.model->config().vocab_size) +
                            " (compared models share one vocabulary)");
        GenerationSettings model_settings = settings;
        model_settings.keep_logits = mi > 0;
        for (size_t pi = 0; pi < req.prompts.size(); ++pi) {
            const PreparedPrompt prompt = prepare_prompt(m, req, req.prompts[pi]);
            GenerateOutput out;
            out.model = req.models[mi];
            out.model_index = mi;
            out.prompt_index = pi;
            out.prompt = req.prompts[pi].messages_json.empty() ? req.prompts[pi].text : req.prompts[pi].messages_json;
            out.rendered_prompt = prompt.rendered;
            out.prompt_ids = prompt.ids;
            out.chat_template_sha256 = prompt.template_sha256;
            const size_t index = report.outputs.size();
            const GenerationResult g = generate_text(
                *m.model, m.text, prompt.ids, model_settings,
                [&](const GeneratedToken& t, const std::string&) {
                    if (stream) stream(index, generated_token_info(m, t));
                },
                cancel);
            out.text = g.text;
            out.stop_reason = g.stop_reason;
            out.time_to_first_token_s = g.prefill_seconds;
            out.decode_tokens_per_second = g.decode_tokens_per_second();
            for (const GeneratedToken& t : g.tokens) out.tokens.push_back(generated_token_info(m, t));
            if (mi == 0) {
                reference_results.push_back(g);
            } else {
                const std::vector<double> kl = generation_kl(*reference.model, g);
                for (size_t i = 0; i < kl.size(); ++i) out.tokens[i].kl_to_reference = kl[i];
                out.mean_kl = kl.empty() ? 0.0 : std::accumulate(kl.begin(), kl.end(), 0.0) / static_cast<double>(kl.size());
                out.first_divergence = first_divergent_token(reference_results[pi], g);
            }
            report.outputs.push_back(std::move(out));
            sink.progress(static_cast<int64_t>(report.outputs.size()), total, "generate");
        }
    }
    return report;
}

}  // namespace ql
