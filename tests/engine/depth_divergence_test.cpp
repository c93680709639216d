// SPDX-License-Identifier: GPL-3.0-or-later
// Depth-wise error propagation and token divergence (engine/diagnosis) on the golden tiny models.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>

#include "engine/api/divergence_json.h"
#include "engine/core/errors.h"
#include "engine/diagnosis/depth_divergence.h"
#include "engine/diagnosis/token_divergence.h"
#include "engine/eval/evaluator.h"
#include "engine/loading/model_source.h"
#include "engine/ptq/ptq_pipeline.h"

namespace ql {
namespace {

const std::string kModels = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/";

Dataset tokens(const OpenedModel& m, DataSplit split, int64_t samples, int64_t length) {
    DataOptions o;
    o.split = split;
    o.samples = samples;
    o.sequence_length = length;
    return load_dataset("synthetic:random-tokens", o, m.data);
}

TEST(ResidualStream, EveryModelPassesItsStreamThroughTheTapAtEachSubLayer) {
    for (const char* name : {"llama", "gpt2", "bert", "qwen2"}) {
        OpenedModel m = open_model(kModels + name);
        c10::InferenceMode inference;
        const ResidualStream& stream = m.model->residual_stream();
        const int64_t layers = m.model->config().num_layers;
        ASSERT_EQ(stream.stages().size(), static_cast<size_t>(2 * layers + 1)) << name;
        EXPECT_EQ(stream.blocks(), layers) << name;
        // Every block layer is computed by exactly one stage of its own block.
        for (const QuantizableLayer* l : m.model->quantizable_layers()) {
            int owners = 0;
            for (const ResidualStage& s : stream.stages())
                for (const std::string& n : s.layers)
                    if (n == l->name) {
                        ++owners;
                        if (s.block >= 0) EXPECT_EQ(l->name.rfind(s.block_name + ".", 0), 0u) << l->name;
                    }
            EXPECT_EQ(owners, l->name == "lm_head" ? 0 : 1) << name << " " << l->name;
        }
        const at::Tensor ids = at::randint(0, m.model->config().vocab_size, {2, 7}, at::kLong);
        const at::Tensor plain = m.model->forward(ids);
        std::vector<size_t> seen;
        at::Tensor out;
        {
            ScopedResidualTap tap(m.model->residual_stream(), [&](size_t k, const at::Tensor& x) {
                seen.push_back(k);
                EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 7, m.model->config().hidden_size})) << name;
                return x;
            });
            out = m.model->forward(ids);
        }
        ASSERT_EQ(seen.size(), stream.stages().size()) << name;
        for (size_t k = 0; k < seen.size(); ++k) EXPECT_EQ(seen[k], k);
        EXPECT_TRUE(at::equal(out, plain)) << name << ": a reading tap changes nothing";
        EXPECT_FALSE(m.model->residual_stream().tapped());
        // Replacing the stream changes the output; a stop ends the forward.
        {
            ScopedResidualTap tap(m.model->residual_stream(),
                                  [&](size_t k, const at::Tensor& x) { return k == 1 ? at::zeros_like(x) : x; });
            EXPECT_FALSE(at::allclose(m.model->forward(ids), plain)) << name;
        }
        {
            ScopedResidualTap tap(m.model->residual_stream(), [&](size_t k, const at::Tensor& x) -> at::Tensor {
                if (k == 2) throw ResidualStreamStop();
                return x;
            });
            EXPECT_THROW(m.model->forward(ids), ResidualStreamStop);
        }
        EXPECT_TRUE(at::equal(m.model->forward(ids), plain)) << name << ": the tap is gone after a stop";
    }
}

TEST(TokenDivergence, SummaryFollowsLlamaCppsDefinitions) {
    TokenDivergenceAccumulator a;
    // KL 0..9, every other top-1 the same, delta p = +0.1 / -0.3 alternately; NLLs ln 2 and ln 4.
    for (int i = 0; i < 10; ++i) {
        const double pf = 0.5, pq = i % 2 ? 0.2 : 0.6;
        a.add_token(i, i % 2 == 0, pf, pq, std::log(2.0), std::log(4.0));
    }
    const TokenDivergenceSummary s = a.summary();
    EXPECT_EQ(s.tokens, 10);
    EXPECT_DOUBLE_EQ(s.kl_mean, 4.5);
    EXPECT_DOUBLE_EQ(s.kl_median, 4.5);  // even count: the mean of the two middle values
    EXPECT_NEAR(s.kl_p90, 8.1, 1e-12);   // p = 0.9 * 9 = 8.1: 8 + 0.1 * (9 - 8)
    EXPECT_NEAR(s.kl_p95, 8.55, 1e-12);
    EXPECT_NEAR(s.kl_p99, 8.91, 1e-12);
    EXPECT_DOUBLE_EQ(s.kl_max, 9);
    EXPECT_DOUBLE_EQ(s.same_top1, 0.5);
    EXPECT_NEAR(s.delta_p_mean, -0.1, 1e-12);
    EXPECT_NEAR(s.rms_delta_p, std::sqrt((0.01 + 0.09) / 2), 1e-12);
    EXPECT_NEAR(s.ppl_fp, 2.0, 1e-12);
    EXPECT_NEAR(s.ppl_q, 4.0, 1e-12);
    EXPECT_NEAR(s.delta_ppl, 2.0, 1e-12);
    EXPECT_EQ(TokenDivergenceAccumulator().summary().tokens, 0);
    EXPECT_DOUBLE_EQ(sorted_percentile({3.0}, 0.99), 3.0);
}

TEST(TokenDivergence, ScoresOnlyTheScoredPositions) {
    const at::Tensor fp = at::tensor({0.0, 1.0, 2.0, 2.0, 1.0, 0.0}, at::kFloat).reshape({1, 2, 3});
    const at::Tensor q = at::tensor({0.0, 1.0, 2.0, 0.0, 1.0, 2.0}, at::kFloat).reshape({1, 2, 3});
    const at::Tensor targets = at::tensor(std::vector<int64_t>{2, Dataset::kIgnoreIndex}, at::kLong).reshape({1, 2});
    const TokenScores s = score_tokens(fp, q, targets);
    EXPECT_DOUBLE_EQ(s.kl[0][0].item<double>(), 0.0);
    EXPECT_DOUBLE_EQ(s.kl[0][1].item<double>(), 0.0);  // unscored, though the distributions differ
    EXPECT_EQ(s.fp_top1[0][1].item<int64_t>(), 0);
    EXPECT_EQ(s.q_top1[0][1].item<int64_t>(), 2);
    const double p2 = std::exp(2.0) / (1 + std::exp(1.0) + std::exp(2.0));
    EXPECT_NEAR(s.p_fp_target[0][0].item<double>(), p2, 1e-12);
    EXPECT_NEAR(s.p_q_top1[0][0].item<double>(), p2, 1e-12);
    TokenDivergenceAccumulator a;
    a.add(s);
    EXPECT_EQ(a.count(), 1);
}

struct Quantized {
    OpenedModel fp, q;
    std::unique_ptr<QuantizedModel> quantization;
};

Quantized quantize(const std::string& model, const std::string& recipe) {
    Quantized r{open_model(kModels + model), open_model(kModels + model), nullptr};
    r.quantization = std::make_unique<QuantizedModel>(*r.q.model, load_recipe(recipe));
    NullJobSink sink;
    CancellationToken cancel;
    run_ptq_pipeline(*r.quantization, tokens(r.q, DataSplit::Train, 16, 16), PtqOptions{}, sink, cancel);
    return r;
}

TEST(DepthDivergence, PropagatedIsolatedAndKlIncrementsAreConsistent) {
    Quantized m = quantize("llama", "MXFP4");
    const Dataset data = tokens(m.fp, DataSplit::Validation, 24, 20);
    m.quantization->find("model.layers.1.mlp.up_proj")->set_input_enabled(false);  // a switch that must survive
    NullJobSink sink;
    CancellationToken cancel;
    DepthDivergenceOptions o;
    o.batch_size = 7;  // batches of unequal size
    o.worst_tokens = 5;
    const DivergenceReport r = measure_divergence(*m.fp.model, *m.quantization, data, o, sink, cancel);
    EXPECT_FALSE(m.quantization->find("model.layers.1.mlp.up_proj")->input_enabled());
    EXPECT_TRUE(m.quantization->find("model.layers.1.mlp.down_proj")->input_enabled());
    ASSERT_EQ(r.blocks.size(), 2u);
    EXPECT_EQ(r.blocks[0].name, "model.layers.0");
    EXPECT_EQ(r.scored_tokens, 24 * 20);
    // The embeddings are not quantized: no error there, and block 0 sees the FP stream either way.
    EXPECT_EQ(r.embeddings.rel_l2, 0);
    EXPECT_TRUE(std::isinf(r.embeddings.sqnr_db));
    EXPECT_DOUBLE_EQ(*r.embeddings_kl, 0);
    EXPECT_DOUBLE_EQ(r.blocks[0].block.propagated.rel_l2, r.blocks[0].block.isolated.rel_l2);
    EXPECT_DOUBLE_EQ(r.blocks[0].attention.propagated.rel_l2, r.blocks[0].attention.isolated.rel_l2);
    EXPECT_DOUBLE_EQ(*r.blocks[0].block.kl_propagated, *r.blocks[0].block.kl_isolated);
    for (const BlockDivergence& b : r.blocks) {
        for (const ErrorSplit* s : {&b.block, &b.attention, &b.mlp}) {
            EXPECT_GT(s->propagated.rel_l2, 1e-3) << b.name;
            EXPECT_GT(s->isolated.rel_l2, 1e-3) << b.name;
            EXPECT_NEAR(s->propagated.sqnr_db, -20 * std::log10(s->propagated.rel_l2), 1e-9) << b.name;
            EXPECT_GT(s->propagated.cosine, 0.5) << b.name;
            EXPECT_LT(s->propagated.cosine, 1.0) << b.name;
            EXPECT_GT(*s->kl_isolated, 0) << b.name;
        }
        // The halves' increments make up the block's.
        EXPECT_NEAR(*b.attention.kl_increment + *b.mlp.kl_increment, *b.block.kl_increment, 1e-12) << b.name;
    }
    // Error accumulates: the second block's stream is further from FP than its isolated error alone.
    EXPECT_GT(r.blocks[1].block.propagated.rel_l2, r.blocks[1].block.isolated.rel_l2);
    // The increments add up to the final KL (the head is FP: it adds nothing) ...
    double sum = *r.embeddings_kl + *r.head_kl_increment;
    for (const BlockDivergence& b : r.blocks) sum += *b.block.kl_increment;
    EXPECT_NEAR(*r.head_kl_increment, 0, 1e-15);
    EXPECT_NEAR(sum, *r.kl, 1e-12 * *r.kl);
    EXPECT_NEAR(*r.blocks[1].block.kl_propagated, *r.kl, 1e-12 * *r.kl);
    // ... and the final KL is the evaluator's KL of the quantized model against the FP one (which
    // computes in float32: a KL of ~4e-4 nats carries its rounding at the 1e-4 level).
    const EvalReport e = evaluate(*m.q.model, m.fp.model.get(), data, EvalOptions{}, sink, cancel);
    EXPECT_NEAR(*r.kl, *e.overall.kl, 1e-3 * *r.kl);
    ASSERT_TRUE(r.tokens);
    EXPECT_EQ(r.tokens->tokens, 24 * 20);
    EXPECT_NEAR(r.tokens->kl_mean, *r.kl, 1e-12);
    EXPECT_NEAR(r.tokens->same_top1, *e.overall.agreement, 1e-12);
    ASSERT_TRUE(e.overall.token_divergence);
    EXPECT_NEAR(e.overall.token_divergence->kl_p99, r.tokens->kl_p99, 1e-3 * r.tokens->kl_p99);
    // Δppl is a difference of two perplexities near 128: float32 NLLs move it by ~1e-6 x ppl.
    EXPECT_NEAR(e.overall.token_divergence->delta_ppl, r.tokens->delta_ppl, 1e-5 * r.tokens->ppl_q);
    EXPECT_NEAR(e.overall.token_divergence->ppl_fp, r.tokens->ppl_fp, 1e-5 * r.tokens->ppl_fp);
    // The worst tokens, largest KL first, the first being the largest of all.
    ASSERT_EQ(r.worst_tokens.size(), 5u);
    EXPECT_NEAR(r.worst_tokens[0].kl, r.tokens->kl_max, 1e-12);
    for (size_t i = 1; i < r.worst_tokens.size(); ++i) EXPECT_LE(r.worst_tokens[i].kl, r.worst_tokens[i - 1].kl);
    for (const TokenDivergence& t : r.worst_tokens) {
        EXPECT_EQ(t.block_propagated.size(), 2u);
        EXPECT_EQ(t.block_isolated.size(), 2u);
        EXPECT_DOUBLE_EQ(t.block_propagated[0], t.block_isolated[0]);
        EXPECT_EQ(t.worst_layers.size(), 8u);  // the 8 largest of the 14 quantized layers
        EXPECT_NEAR(t.delta_p, t.p_q_target - t.p_fp_target, 1e-15);
        EXPECT_FALSE(t.context.empty());
    }
    // Every quantized layer on its own (14 linear layers; lm_head is excluded by the preset).
    EXPECT_EQ(r.layers.size(), 14u);
    for (const LayerDivergence& l : r.layers) {
        EXPECT_GT(l.rel_l2, 0) << l.name;
        EXPECT_GE(l.block, 0) << l.name;
    }
}

TEST(DepthDivergence, AModelAgainstItselfShowsNoError) {
    OpenedModel fp = open_model(kModels + "gpt2");
    OpenedModel same = open_model(kModels + "gpt2");
    QuantizedModel off(*same.model, load_recipe("NVFP4_DEFAULT"));  // installed, every quantizer off
    NullJobSink sink;
    CancellationToken cancel;
    const DivergenceReport r = measure_divergence(*fp.model, off, tokens(fp, DataSplit::Validation, 6, 12), {}, sink, cancel);
    ASSERT_EQ(r.blocks.size(), 2u);
    for (const BlockDivergence& b : r.blocks) {
        EXPECT_EQ(b.block.propagated.rel_l2, 0);
        EXPECT_EQ(b.block.isolated.rel_l2, 0);
        EXPECT_TRUE(std::isinf(b.mlp.isolated.sqnr_db));
        EXPECT_DOUBLE_EQ(b.block.propagated.cosine, 1.0);
        EXPECT_EQ(*b.block.kl_increment, 0);
    }
    EXPECT_EQ(*r.kl, 0);
    EXPECT_DOUBLE_EQ(r.tokens->same_top1, 1.0);
    EXPECT_DOUBLE_EQ(r.tokens->delta_ppl, 0);
    EXPECT_TRUE(r.layers.empty());  // nothing quantized
}

TEST(DepthDivergence, EncodersReportHiddenStatesAndTheSentenceEmbedding) {
    Quantized m = quantize("bert", "NVFP4_DEFAULT");
    NullJobSink sink;
    CancellationToken cancel;
    const DivergenceReport r =
        measure_divergence(*m.fp.model, *m.quantization, tokens(m.fp, DataSplit::Validation, 8, 10), {}, sink, cancel);
    EXPECT_TRUE(r.encoder);
    EXPECT_FALSE(r.kl);
    EXPECT_FALSE(r.tokens);
    EXPECT_FALSE(r.blocks[0].block.kl_propagated);
    ASSERT_TRUE(r.sentence_cosine);
    EXPECT_GT(*r.sentence_cosine, 0.5);
    EXPECT_LT(*r.sentence_cosine, 1.0);
    EXPECT_DOUBLE_EQ(r.final_hidden.rel_l2, r.blocks.back().block.propagated.rel_l2);
    EXPECT_GT(r.final_hidden.rel_l2, 0);
    ASSERT_FALSE(r.worst_tokens.empty());
    EXPECT_GT(r.worst_tokens[0].kl, 0);  // encoders rank tokens by the output's relative error
}

TEST(DepthDivergence, RefusesWhatItCannotCompare) {
    OpenedModel llama = open_model(kModels + "llama");
    OpenedModel gpt2 = open_model(kModels + "gpt2");
    QuantizedModel q(*gpt2.model, load_recipe("NVFP4_DEFAULT"));
    NullJobSink sink;
    CancellationToken cancel;
    const Dataset data = tokens(llama, DataSplit::Validation, 2, 8);
    try {
        measure_divergence(*llama.model, q, data, {}, sink, cancel);
        FAIL() << "different architectures were compared";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("architecture"), std::string::npos) << e.what();
    }
    cancel.cancel();
    QuantizedModel own(*llama.model, load_recipe("NVFP4_DEFAULT"));
    OpenedModel other = open_model(kModels + "llama");
    EXPECT_THROW(measure_divergence(*other.model, own, data, {}, sink, cancel), JobCancelled);
}

TEST(DivergenceJson, RoundTripsAndNamesBadFields) {
    Quantized m = quantize("llama", "NVFP4_DEFAULT");
    NullJobSink sink;
    CancellationToken cancel;
    DepthDivergenceOptions o;
    o.worst_tokens = 3;
    DivergenceReport r =
        measure_divergence(*m.fp.model, *m.quantization, tokens(m.fp, DataSplit::Validation, 4, 8), o, sink, cancel);
    r.model = "m";
    const std::string text = divergence_report_json(r).dump();
    const DivergenceReport back = parse_divergence_report(text, "test.json");
    EXPECT_EQ(divergence_report_json(back).dump(), text);
    EXPECT_TRUE(std::isinf(back.embeddings.sqnr_db));  // null in JSON, +inf again
    nlohmann::json j = nlohmann::json::parse(text);
    ASSERT_EQ(j["blocks"].size(), 2u);
    for (const char* key : {"rel_l2", "cosine", "sqnr_db", "kl", "kl_increment"})
        EXPECT_TRUE(j["blocks"][1]["propagated"].contains(key)) << key;
    EXPECT_TRUE(j["blocks"][1]["mlp"]["isolated"]["rel_l2"].is_number());
    EXPECT_EQ(j["logits"]["isolated"].size(), 2u);
    EXPECT_TRUE(j["tokens"]["kl_p99"].is_number());
    j["blocks"][0]["attention"]["isolated"]["rel_l2"] = "high";
    try {
        parse_divergence_report(j.dump(), "test.json");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("blocks[0].attention.isolated.rel_l2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("test.json"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_divergence_report("[1, 2]", "x"), UserError);
    EXPECT_THROW(parse_divergence_report(text.substr(0, text.size() / 2), "x"), UserError);
}

}  // namespace
}  // namespace ql
