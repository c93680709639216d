// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/generation/text_generator.h"

#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>

#include "engine/core/errors.h"
#include "engine/models/frozen_effective_weights.h"
#include "engine/models/model_device.h"

namespace ql {
namespace {

using GenerationClock = std::chrono::steady_clock;

double generation_seconds_since(GenerationClock::time_point start) {
    return std::chrono::duration<double>(GenerationClock::now() - start).count();
}

// The last position's logits of [1, T, V] as floats on the CPU.
std::vector<float> generation_last_logits(const at::Tensor& logits) {
    const at::Tensor row = logits.select(0, 0).select(0, logits.size(1) - 1).to(at::kCPU, at::kFloat).contiguous();
    const float* p = row.data_ptr<float>();
    return {p, p + row.numel()};
}

// Bytes at the end of `s` that are the start of a UTF-8 sequence not yet complete.
size_t incomplete_utf8_tail(const std::string& s) {
    for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
        const unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
        if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

// The U+FFFD that byte-level decoders print for a partial character.
bool ends_with_replacement(const std::string& s) { return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0; }

}  // namespace

void validate_generation(const GenerationSettings& s) {
    if (s.max_new_tokens < 1) throw UserError("generation: max_new_tokens must be at least 1");
    if (s.alternatives < 0) throw UserError("generation: alternatives must not be negative");
    for (const std::string& stop : s.stop_strings)
        if (stop.empty()) throw UserError("generation: a stop string is empty");
    validate_sampling(s.sampling);
}

double GenerationResult::decode_tokens_per_second() const {
    return tokens.size() >= 2 && decode_seconds > 0 ? static_cast<double>(tokens.size() - 1) / decode_seconds : 0.0;
}

GenerationResult generate_text(Model& model, const ModelText& text, const std::vector<int64_t>& prompt_ids,
                               const GenerationSettings& settings, const TokenStream& stream,
                               const CancellationToken& cancel) {
    validate_generation(settings);
    if (!model.generates_text())
        throw UserError("generation: " + (model.config().name.empty() ? model.config().model_type : model.config().name) +
                        " is not a decoder: it does not generate text");
    if (!text.has_text()) throw UserError("generation: the model has no tokenizer to turn tokens into text");
    if (prompt_ids.empty()) throw UserError("generation: the prompt has no tokens");
    const ModelConfig& c = model.config();
    const int64_t capacity = static_cast<int64_t>(prompt_ids.size()) + settings.max_new_tokens;
    if (c.architecture == "gpt2" && capacity > c.max_positions)
        throw UserError("generation: " + std::to_string(prompt_ids.size()) + " prompt tokens + " +
                        std::to_string(settings.max_new_tokens) + " new ones exceed the model's " +
                        std::to_string(c.max_positions) + " positions");

    c10::InferenceMode inference;
    FrozenEffectiveWeights frozen(model);
    const TokenSampler sampler(settings.sampling);
    std::vector<int64_t> ends = text.end_ids;
    ends.insert(ends.end(), settings.stop_ids.begin(), settings.stop_ids.end());
    size_t longest_stop = 0;
    for (const std::string& s : settings.stop_strings) longest_stop = std::max(longest_stop, s.size());

    GenerationResult r;
    r.prompt_ids = prompt_ids;
    KvCache cache(static_cast<int64_t>(model.attention_sites().size()), capacity);
    std::vector<int64_t> context = prompt_ids;
    std::vector<int64_t> generated_ids;  // without an end id
    std::string shown;                   // text handed to the stream so far
    std::vector<at::Tensor> kept;        // keep_logits

    const auto start = GenerationClock::now();
    auto decode_step = GenerationClock::now();
    at::Tensor input = on_model_device(model, at::tensor(prompt_ids, at::kLong).unsqueeze(0));
    for (int64_t step = 0; step < settings.max_new_tokens; ++step) {
        cancel.throw_if_cancelled();
        const at::Tensor step_logits = model.forward_cached(input, cache, /*last_only=*/true);
        const std::vector<float> logits = generation_last_logits(step_logits);
        if (settings.keep_logits) kept.push_back(at::tensor(logits, at::kFloat));
        GeneratedToken token;
        token.id = sampler.choose(logits, context, step);
        token.probability = token_probability(logits, token.id);
        if (settings.alternatives > 0) token.alternatives = top_probabilities(logits, settings.alternatives);
        if (step == 0) {
            r.prefill_seconds = generation_seconds_since(start);
            decode_step = GenerationClock::now();
        }
        context.push_back(token.id);
        const bool is_end = std::find(ends.begin(), ends.end(), token.id) != ends.end();
        const std::string before = r.text;
        std::string full = before;
        if (!is_end) {
            generated_ids.push_back(token.id);
            full = text.decode(generated_ids);
        }
        // The token's own text: what it added to the decoded text (a byte of a character split
        // over tokens adds nothing until the character is whole).
        size_t common = 0;
        while (common < before.size() && common < full.size() && before[common] == full[common]) ++common;
        token.text = full.substr(common);
        // A stop string anywhere in the text ends it there.
        size_t cut = std::string::npos;
        for (const std::string& s : settings.stop_strings) cut = std::min(cut, full.find(s));
        const bool stopped = cut != std::string::npos;
        if (stopped) full.resize(cut);
        r.text = full;
        const bool last = is_end || stopped || step + 1 == settings.max_new_tokens;
        // Hold back what may still change: a partial UTF-8 character, and the start of a stop string.
        size_t ready = full.size();
        if (!last) {
            if (ends_with_replacement(full)) ready -= 3;
            ready -= std::min(ready, incomplete_utf8_tail(full.substr(0, ready)));
            ready -= std::min(ready, longest_stop > 0 ? longest_stop - 1 : size_t{0});
        }
        const std::string new_text = ready > shown.size() ? full.substr(shown.size(), ready - shown.size()) : "";
        if (!new_text.empty()) shown += new_text;
        r.tokens.push_back(token);
        if (stream) stream(r.tokens.back(), new_text);
        if (last) {
            r.stop_reason = is_end ? "end" : stopped ? "stop_string" : "max_tokens";
            break;
        }
        input = on_model_device(model, at::tensor(std::vector<int64_t>{token.id}, at::kLong).unsqueeze(0));
    }
    if (!r.tokens.empty()) r.decode_seconds = r.tokens.size() > 1 ? generation_seconds_since(decode_step) : 0.0;
    r.kv_cache_bytes = cache.bytes();
    if (settings.keep_logits && !kept.empty()) r.logits = at::stack(kept);
    return r;
}

}  // namespace ql
