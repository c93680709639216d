// SPDX-License-Identifier: GPL-3.0-or-later
// Text generation (engine/generation): the KV-cache forward equals the full forward for every
// decoder family (split anywhere, with a quantized KV cache too), weights quantized once for a
// generation give the same logits, the token sampler follows transformers' processors, and the
// generator's greedy output equals argmax decoding by full forwards, with end ids, stop strings,
// streaming and cancellation as documented.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/generation/text_generator.h"
#include "engine/generation/token_sampler.h"
#include "engine/models/frozen_effective_weights.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"
#include "engine/quant/kv_cache_quantizer.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

using test::user_error_text;

const std::string kModels = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/";

at::Tensor ids_of(const std::vector<int64_t>& v) { return at::tensor(v, at::kLong).unsqueeze(0); }

std::vector<int64_t> some_ids(int64_t n, int64_t vocab, int64_t salt = 0) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; ++i) v.push_back((i * 37 + 11 + salt * 7) % vocab);
    return v;
}

// The logits of `ids` computed in consecutive parts of the given lengths through one cache.
at::Tensor cached_logits(Model& m, const std::vector<int64_t>& ids, const std::vector<int64_t>& parts) {
    KvCache cache(static_cast<int64_t>(m.attention_sites().size()), static_cast<int64_t>(ids.size()));
    std::vector<at::Tensor> out;
    size_t at = 0;
    for (int64_t n : parts) {
        const std::vector<int64_t> piece(ids.begin() + static_cast<std::ptrdiff_t>(at), ids.begin() + static_cast<std::ptrdiff_t>(at + n));
        out.push_back(m.forward_cached(ids_of(piece), cache));
        at += static_cast<size_t>(n);
    }
    EXPECT_EQ(cache.length(), static_cast<int64_t>(ids.size()));
    return at::cat(out, 1);
}

TEST(KvCacheForward, EqualsTheFullForwardForEveryDecoderFamily) {
    c10::InferenceMode inference;
    for (const char* name : {"llama", "llama3_gqa", "mistral_swa", "qwen2", "qwen3", "gemma3_text", "gpt2"}) {
        const std::unique_ptr<Model> m = load_hf_model(kModels + name);
        ASSERT_TRUE(m->generates_text()) << name;
        const std::vector<int64_t> ids = some_ids(24, m->config().vocab_size);
        const at::Tensor full = m->forward(ids_of(ids));
        for (const std::vector<int64_t>& parts :
             std::vector<std::vector<int64_t>>{{24}, {1, 23}, {10, 1, 1, 1, 11}, std::vector<int64_t>(24, 1)}) {
            const at::Tensor cached = cached_logits(*m, ids, parts);
            EXPECT_LE((cached - full).abs().max().item<double>(), 2e-5) << name << " in " << parts.size() << " parts";
        }
        KvCache cache(static_cast<int64_t>(m->attention_sites().size()), static_cast<int64_t>(ids.size()));
        const at::Tensor last = m->forward_cached(ids_of(ids), cache, /*last_only=*/true);
        ASSERT_EQ(last.size(1), 1) << name;
        EXPECT_LE((last.select(1, 0) - full.select(1, -1)).abs().max().item<double>(), 2e-5) << name;
    }
}

TEST(KvCacheForward, QuantizedCacheHoldsWhatTheFullForwardQuantizes) {
    c10::InferenceMode inference;
    const std::unique_ptr<Model> m = load_hf_model(kModels + "llama3_gqa");
    std::vector<std::unique_ptr<KvCacheQuantizer>> quantizers;
    for (AttentionSite* site : m->attention_sites()) {
        KvCacheSettings s;
        s.enabled = true;
        s.format = "fp8_e4m3";
        quantizers.push_back(std::make_unique<KvCacheQuantizer>(*site, s, false));
        quantizers.back()->set_amax({0.05f}, {0.05f});  // static scales: per token, so splitting cannot change them
        quantizers.back()->set_enabled(true);
    }
    const std::vector<int64_t> ids = some_ids(20, m->config().vocab_size, 3);
    const at::Tensor full = m->forward(ids_of(ids));
    const at::Tensor cached = cached_logits(*m, ids, {7, 1, 12});
    EXPECT_LE((cached - full).abs().max().item<double>(), 2e-5);
    quantizers.clear();
    EXPECT_GT((m->forward(ids_of(ids)) - full).abs().max().item<double>(), 1e-4) << "the quantized cache changed nothing";
}

TEST(KvCacheForward, RefusesWhatDoesNotFit) {
    c10::InferenceMode inference;
    const std::unique_ptr<Model> m = load_hf_model(kModels + "llama");
    KvCache cache(static_cast<int64_t>(m->attention_sites().size()), 4);
    m->forward_cached(ids_of({1, 2, 3}), cache);
    EXPECT_NE(user_error_text([&] { m->forward_cached(ids_of({4, 5}), cache); }).find("5 positions do not fit its 4"),
              std::string::npos);
    EXPECT_NE(user_error_text([] { KvCache(0, 4); }).find("at least one attention site"), std::string::npos);
    const std::unique_ptr<Model> gpt2 = load_hf_model(kModels + "gpt2");
    KvCache big(static_cast<int64_t>(gpt2->attention_sites().size()), 1000);
    const int64_t positions = gpt2->config().max_positions;
    gpt2->forward_cached(ids_of(std::vector<int64_t>(static_cast<size_t>(positions), 1)), big);
    EXPECT_NE(user_error_text([&] { gpt2->forward_cached(ids_of({1}), big); }).find("is past the"), std::string::npos);
}

TEST(FrozenEffectiveWeights, QuantizeEachWeightOnceAndGiveTheSameLogits) {
    c10::InferenceMode inference;
    const std::unique_ptr<Model> m = load_hf_model(kModels + "llama");
    int calls = 0;
    for (QuantizableLayer* l : m->quantizable_layers())
        l->weight_quantizer = [&calls](const at::Tensor& w) {
            ++calls;
            return (w * 64).round() / 64;
        };
    const at::Tensor ids = ids_of(some_ids(12, m->config().vocab_size));
    const at::Tensor plain = m->forward(ids);
    const int per_forward = calls;
    calls = 0;
    {
        FrozenEffectiveWeights frozen(*m);
        EXPECT_EQ(calls, per_forward);  // once per quantized layer, at construction
        const at::Tensor a = m->forward(ids), b = m->forward(ids);
        EXPECT_EQ(calls, per_forward) << "a frozen forward quantized again";
        EXPECT_TRUE(at::equal(a, plain));
        EXPECT_TRUE(at::equal(b, plain));
    }
    m->forward(ids);
    EXPECT_EQ(calls, 2 * per_forward) << "the weights stayed frozen after the scope";
}

TEST(TokenSampler, GreedyIsTheFirstArgmaxAfterTheRepetitionPenalty) {
    const TokenSampler greedy(SamplingSettings{});
    EXPECT_EQ(greedy.choose({0.1f, 2.0f, 2.0f, -1.0f}, {}, 0), 1);
    SamplingSettings s;
    s.repetition_penalty = 2.0;  // 2.0 -> 1.0 for a seen token; a negative one doubles
    const TokenSampler penalised(s);
    EXPECT_EQ(penalised.choose({0.1f, 2.0f, 1.5f, -1.0f}, {1}, 0), 2);
    EXPECT_EQ(penalised.choose({-0.5f, -0.2f, -0.3f}, {1}, 0), 2);  // -0.2 -> -0.4 < -0.3
}

TEST(TokenSampler, SamplingKeepsWhatTransformersWarpersKeep) {
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    auto counts = [&](const SamplingSettings& s) {
        const TokenSampler sampler(s);
        std::vector<int> n(logits.size(), 0);
        for (int64_t step = 0; step < 4000; ++step) ++n[static_cast<size_t>(sampler.choose(logits, {}, step))];
        return n;
    };
    SamplingSettings s;
    s.temperature = 1.0;
    s.seed = 3;
    const std::vector<int> all = counts(s);
    for (int c : all) EXPECT_GT(c, 0);
    EXPECT_NEAR(all[0] / 4000.0, 0.5, 0.03);
    EXPECT_NEAR(all[3] / 4000.0, 0.05, 0.015);
    s.top_k = 2;
    const std::vector<int> k2 = counts(s);
    EXPECT_EQ(k2[2] + k2[3], 0);
    EXPECT_NEAR(k2[0] / 4000.0, 0.5 / 0.8, 0.03);
    s.top_k = 0;
    s.top_p = 0.8;  // ascending cumulative 0.05, 0.20 <= 0.2 are removed; 0.5 + 0.3 stay
    const std::vector<int> p8 = counts(s);
    EXPECT_EQ(p8[2] + p8[3], 0);
    EXPECT_GT(p8[1], 0);
    s.top_p = 1.0;
    s.min_p = 0.35;  // below 0.35 * 0.5 = 0.175: 0.15 and 0.05 go
    const std::vector<int> mp = counts(s);
    EXPECT_EQ(mp[2] + mp[3], 0);
    EXPECT_GT(mp[1], 0);
    s.min_p = 0;
    s.temperature = 0.05;  // near greedy
    EXPECT_GT(counts(s)[0], 3990);
    // The same seed draws the same tokens; another seed other ones.
    s.temperature = 1.0;
    EXPECT_EQ(counts(s), all);
    s.seed = 4;
    EXPECT_NE(counts(s), all);
}

TEST(TokenSampler, SettingsOutOfRangeNameTheSetting) {
    auto error = [](SamplingSettings s) { return user_error_text([&] { validate_sampling(s); }); };
    SamplingSettings s;
    s.temperature = -1;
    EXPECT_NE(error(s).find("temperature"), std::string::npos);
    s = {};
    s.top_p = 0;
    EXPECT_NE(error(s).find("top_p"), std::string::npos);
    s = {};
    s.min_p = 1;
    EXPECT_NE(error(s).find("min_p"), std::string::npos);
    s = {};
    s.top_k = -2;
    EXPECT_NE(error(s).find("top_k"), std::string::npos);
    s = {};
    s.repetition_penalty = 0;
    EXPECT_NE(error(s).find("repetition_penalty"), std::string::npos);
    EXPECT_EQ(describe_sampling({}), "greedy");
}

// Ids as text: "<id>" each, so stop strings and streaming can be checked exactly.
ModelText id_text() {
    ModelText t;
    t.decode = [](const std::vector<int64_t>& ids) {
        std::string s;
        for (int64_t id : ids) s += "<" + std::to_string(id) + ">";
        return s;
    };
    t.encode_prompt = [](const std::string&) { return std::vector<int64_t>{1}; };
    return t;
}

std::vector<int64_t> argmax_by_full_forwards(Model& m, std::vector<int64_t> ids, int64_t n) {
    c10::InferenceMode inference;
    std::vector<int64_t> out;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t next = m.forward(ids_of(ids)).select(1, -1).argmax(-1).item<int64_t>();
        out.push_back(next);
        ids.push_back(next);
    }
    return out;
}

TEST(TextGenerator, GreedyEqualsArgmaxDecodingByFullForwards) {
    for (const char* name : {"llama", "qwen2", "gpt2"}) {
        const std::unique_ptr<Model> m = load_hf_model(kModels + name);
        const std::vector<int64_t> prompt = some_ids(5, m->config().vocab_size, 1);
        GenerationSettings s;
        s.max_new_tokens = 12;
        std::string streamed;
        const GenerationResult r = generate_text(*m, id_text(), prompt, s,
                                                 [&](const GeneratedToken&, const std::string& text) { streamed += text; }, {});
        std::vector<int64_t> ids;
        for (const GeneratedToken& t : r.tokens) ids.push_back(t.id);
        EXPECT_EQ(ids, argmax_by_full_forwards(*m, prompt, 12)) << name;
        EXPECT_EQ(r.stop_reason, "max_tokens");
        EXPECT_EQ(streamed, r.text);
        EXPECT_EQ(r.text, id_text().decode(ids));
        for (const GeneratedToken& t : r.tokens) {
            ASSERT_EQ(t.alternatives.size(), 5u);
            EXPECT_EQ(t.alternatives.front().id, t.id);  // greedy: the most likely token
            EXPECT_DOUBLE_EQ(t.alternatives.front().probability, t.probability);
            EXPECT_EQ(t.text, "<" + std::to_string(t.id) + ">");
        }
        EXPECT_GT(r.kv_cache_bytes, 0);
    }
}

TEST(TextGenerator, StopsAtEndIdsAndStopStringsAndHoldsBackAPossibleStop) {
    const std::unique_ptr<Model> m = load_hf_model(kModels + "llama");
    const std::vector<int64_t> prompt = some_ids(5, m->config().vocab_size, 1);
    const std::vector<int64_t> expected = argmax_by_full_forwards(*m, prompt, 8);
    GenerationSettings s;
    s.max_new_tokens = 8;
    s.stop_ids = {expected[3]};
    const GenerationResult at_end = generate_text(*m, id_text(), prompt, s, {}, {});
    EXPECT_EQ(at_end.stop_reason, "end");
    ASSERT_EQ(at_end.tokens.size(), 4u);  // the end token is listed, not in the text
    EXPECT_EQ(at_end.tokens.back().text, "");
    EXPECT_EQ(at_end.text, id_text().decode({expected[0], expected[1], expected[2]}));

    s.stop_ids.clear();
    const std::string stop = "<" + std::to_string(expected[2]) + ">";
    s.stop_strings = {stop};
    std::string streamed;
    const GenerationResult at_string =
        generate_text(*m, id_text(), prompt, s, [&](const GeneratedToken&, const std::string& t) { streamed += t; }, {});
    EXPECT_EQ(at_string.stop_reason, "stop_string");
    EXPECT_EQ(at_string.text, id_text().decode({expected[0], expected[1]}));
    EXPECT_EQ(streamed, at_string.text) << "text after the stop string reached the stream";

    CancellationToken cancel;
    int seen = 0;
    s.stop_strings.clear();
    EXPECT_THROW(generate_text(*m, id_text(), prompt, s,
                               [&](const GeneratedToken&, const std::string&) {
                                   if (++seen == 2) cancel.cancel();
                               },
                               cancel),
                 JobCancelled);
    EXPECT_EQ(seen, 2);
}

TEST(TextGenerator, BadRequestsAreUserErrors) {
    const std::unique_ptr<Model> m = load_hf_model(kModels + "llama");
    GenerationSettings s;
    EXPECT_NE(user_error_text([&] { generate_text(*m, id_text(), {}, s, {}, {}); }).find("no tokens"), std::string::npos);
    EXPECT_NE(user_error_text([&] { generate_text(*m, ModelText{}, {1}, s, {}, {}); }).find("no tokenizer"), std::string::npos);
    s.max_new_tokens = 0;
    EXPECT_NE(user_error_text([&] { generate_text(*m, id_text(), {1}, s, {}, {}); }).find("max_new_tokens"), std::string::npos);
    s.max_new_tokens = 4;
    s.stop_strings = {""};
    EXPECT_NE(user_error_text([&] { generate_text(*m, id_text(), {1}, s, {}, {}); }).find("stop string is empty"),
              std::string::npos);
    const std::unique_ptr<Model> bert = load_hf_model(kModels + "bert");
    s.stop_strings.clear();
    EXPECT_NE(user_error_text([&] { generate_text(*bert, id_text(), {1}, s, {}, {}); }).find("not a decoder"), std::string::npos);
}

}  // namespace
}  // namespace ql
