// SPDX-License-Identifier: GPL-3.0-or-later
// Built-in models, layer lists, quantizer hooks, autograd and load_state's checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "engine/core/errors.h"
#include "engine/io/npy_file.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/models/sentence_pooling.h"
#include "engine/models/transformer_ops.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

std::map<std::string, at::Tensor> state_of(const Model& m) {
    std::map<std::string, at::Tensor> s;
    for (const auto& [name, t] : m.file_state()) s[name] = t.clone();
    return s;
}

TEST(BuiltinModels, DemoDecoderIsASmallLlama) {
    auto m = create_model(demo_decoder_config(48), 1);
    EXPECT_EQ(m->config().architecture, "llama");
    EXPECT_EQ(m->config().name, "quantlab-demo");
    EXPECT_GT(m->parameter_count(), 1'000'000);
    EXPECT_LT(m->parameter_count(), 3'000'000);
    const at::Tensor ids = at::randint(0, 48, {3, 20}, at::kLong);
    const at::Tensor logits = m->forward(ids);
    EXPECT_EQ(logits.sizes(), (at::IntArrayRef{3, 20, 48}));
    EXPECT_EQ(m->linear_layers().size(), 4u * 7 + 1);
    EXPECT_EQ(m->find_layer("model.layers.3.mlp.down_proj")->weight.sizes(), (at::IntArrayRef{192, 512}));
    EXPECT_EQ(m->find_layer("model.layers.0.self_attn.k_proj")->weight.sizes(), (at::IntArrayRef{64, 192}));
}

TEST(BuiltinModels, SameSeedSameWeightsOtherSeedOthers) {
    auto a = create_model(demo_decoder_config(), 7), b = create_model(demo_decoder_config(), 7),
         c = create_model(demo_decoder_config(), 8);
    const auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
    EXPECT_FALSE(at::equal(pa[0].second, pc[0].second));
}

TEST(BuiltinModels, DecoderIsCausal) {
    auto m = create_model(demo_decoder_config(), 2);
    at::Tensor ids = at::randint(0, 48, {1, 16}, at::kLong);
    const at::Tensor before = m->forward(ids);
    ids.index_put_({0, 10}, (ids.index({0, 10}).item<int64_t>() + 1) % 48);
    const at::Tensor after = m->forward(ids);
    EXPECT_TRUE(at::equal(before.narrow(1, 0, 10), after.narrow(1, 0, 10)));
    EXPECT_FALSE(at::allclose(before.narrow(1, 10, 6), after.narrow(1, 10, 6)));
}

TEST(BuiltinModels, MlpAndCnnLayersByName) {
    auto mlp = create_model(mlp_config(), 3);
    std::vector<std::string> names;
    for (const QuantizableLayer* l : mlp->quantizable_layers()) names.push_back(l->name);
    EXPECT_EQ(names, (std::vector<std::string>{"fc1", "fc2", "fc3"}));
    EXPECT_EQ(mlp->forward(at::rand({5, 784})).sizes(), (at::IntArrayRef{5, 10}));
    EXPECT_EQ(mlp->parameter_count(), 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10);

    auto cnn = create_model(cnn_config(), 3);
    ASSERT_EQ(cnn->conv_layers().size(), 2u);
    EXPECT_EQ(cnn->conv_layers()[0]->name, "conv1");
    EXPECT_EQ(cnn->conv_layers()[1]->weight.sizes(), (at::IntArrayRef{32, 16, 3, 3}));
    EXPECT_EQ(cnn->linear_layers().at(0)->name, "fc");
    EXPECT_EQ(cnn->quantizable_layers().size(), 3u);
    EXPECT_EQ(cnn->forward(at::rand({2, 1, 28, 28})).sizes(), (at::IntArrayRef{2, 10}));
    EXPECT_NE(test::user_error_text([&] { cnn->forward(at::rand({2, 3, 28, 28})); }).find("images must be float [batch, 1, 28, 28]"),
              std::string::npos);
}

TEST(BuiltinModels, QuantizerHooksAreAppliedInForward) {
    auto m = create_model(cnn_config(), 4);
    const at::Tensor x = at::rand({2, 1, 28, 28});
    const at::Tensor plain = m->forward(x);
    int weight_calls = 0, input_calls = 0;
    for (QuantizableLayer* l : m->quantizable_layers()) {
        l->weight_quantizer = [&](const at::Tensor& w) { ++weight_calls; return w.round(); };
        l->input_quantizer = [&](const at::Tensor& a) { ++input_calls; return a; };
    }
    const at::Tensor quantized = m->forward(x);
    EXPECT_EQ(weight_calls, 3);
    EXPECT_EQ(input_calls, 3);
    EXPECT_FALSE(at::allclose(plain, quantized));
    for (QuantizableLayer* l : m->quantizable_layers()) l->weight_quantizer = nullptr, l->input_quantizer = nullptr;
    EXPECT_TRUE(at::equal(plain, m->forward(x)));
}

TEST(BuiltinModels, TiedLmHeadHasItsOwnHooksButSharesTheWeight) {
    ModelConfig c = demo_decoder_config();
    c.tie_embeddings = true;
    auto m = create_model(c, 5);
    auto* lm_head = dynamic_cast<LinearLayer*>(m->find_layer("lm_head"));
    auto* embed = m->find_layer("model.embed_tokens");
    ASSERT_TRUE(lm_head && embed);
    EXPECT_TRUE(lm_head->weight.is_same(embed->weight));
    for (const auto& [name, t] : m->named_parameters()) EXPECT_NE(name, "lm_head.weight");
    EXPECT_EQ(m->parameter_count(), create_model(demo_decoder_config(), 5)->parameter_count() - 48 * 192);
    // Loading a checkpoint that still holds lm_head.weight: ignored, the embedding wins.
    auto state = state_of(*m);
    state["lm_head.weight"] = at::zeros({48, 192});
    EXPECT_EQ(load_state(*m, state, "ckpt").ignored, std::vector<std::string>{"lm_head.weight"});
    EXPECT_TRUE(lm_head->weight.is_same(embed->weight));
    EXPECT_TRUE(at::equal(lm_head->weight, state.at("model.embed_tokens.weight")));
}

TEST(BuiltinModels, GradientsReachEveryParameterThroughStraightThroughHooks) {
    for (const ModelConfig& c : {demo_decoder_config(), gpt2_small_config()}) {
        ModelConfig small = c;
        small.num_layers = 1;
        if (small.architecture == "gpt2") small.vocab_size = 64, small.hidden_size = 64, small.num_heads = 4, small.num_kv_heads = 4,
                                          small.head_dim = 16, small.intermediate_size = 128, small.max_positions = 16;
        auto m = create_model(small, 6);
        m->set_requires_grad(true);
        for (QuantizableLayer* l : m->quantizable_layers())  // round with a straight-through estimator
            l->weight_quantizer = [](const at::Tensor& w) { return w + (w * 64).round().div(64).detach() - w.detach(); };
        const at::Tensor ids = at::randint(0, small.vocab_size, {2, 8}, at::kLong);
        const at::Tensor loss = at::cross_entropy_loss(m->forward(ids).reshape({-1, small.vocab_size}), ids.reshape({-1}));
        loss.backward();
        for (const auto& [name, t] : m->named_parameters()) {
            ASSERT_TRUE(t.grad().defined()) << name;
            EXPECT_GT(t.grad().abs().sum().item<double>(), 0.0) << name;
        }
    }
}

TEST(LoadState, ChecksEveryTensorBeforeChangingAny) {
    auto m = create_model(demo_decoder_config(), 1);
    const auto good = state_of(*m);
    auto other = create_model(demo_decoder_config(), 2);
    auto state = state_of(*other);
    state.erase("model.layers.2.mlp.up_proj.weight");
    EXPECT_EQ(test::user_error_text([&] { load_state(*m, state, "a.safetensors"); }),
              "a.safetensors: tensor 'model.layers.2.mlp.up_proj.weight' is missing");
    EXPECT_TRUE(at::equal(m->named_parameters()[0].second, good.at("model.embed_tokens.weight")));  // untouched

    state = state_of(*other);
    state["model.layers.0.self_attn.q_proj.weight"] = at::zeros({192, 191});
    EXPECT_EQ(test::user_error_text([&] { load_state(*m, state, "a.safetensors"); }),
              "a.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' has shape [192, 191], expected [192, 192]");
    state = state_of(*other);
    state["model.layers.9.mlp.up_proj.weight"] = at::zeros({1});
    EXPECT_EQ(test::user_error_text([&] { load_state(*m, state, "a.safetensors"); }),
              "a.safetensors: tensor 'model.layers.9.mlp.up_proj.weight' is not a parameter of this llama model");
    state = state_of(*other);
    state["model.norm.weight"].index_put_({3}, NAN);
    EXPECT_NE(test::user_error_text([&] { load_state(*m, state, "a.safetensors"); }).find("'model.norm.weight' holds NaN"),
              std::string::npos);
    state = state_of(*other);
    state["model.norm.weight"] = state["model.norm.weight"].to(at::kLong);
    EXPECT_NE(test::user_error_text([&] { load_state(*m, state, "a.safetensors"); }).find("expected a floating-point type"),
              std::string::npos);

    state = state_of(*other);
    state["model.norm.weight"] = state["model.norm.weight"].to(at::kBFloat16);  // converted to float32
    load_state(*m, state, "a.safetensors");
    EXPECT_EQ(m->named_parameters().back().second.scalar_type(), at::kFloat);
    const at::Tensor ids = at::randint(0, 48, {1, 5}, at::kLong);
    EXPECT_TRUE(at::allclose(m->forward(ids), other->forward(ids), 1e-2, 1e-3));
}

TEST(LoadState, DecoderInputsAreChecked) {
    auto m = create_model(demo_decoder_config(), 1);
    EXPECT_NE(test::user_error_text([&] { m->forward(at::full({1, 3}, 48, at::kLong)); }).find("token id 48 is outside the vocabulary [0, 48)"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([&] { m->forward(at::zeros({1, 3}, at::kInt)); }).find("token ids must be int64 [batch, seq]"),
              std::string::npos);
    ModelConfig g = gpt2_small_config();
    g.num_layers = 1, g.vocab_size = 10, g.max_positions = 4;
    auto gpt2 = create_model(g, 1);
    EXPECT_NE(test::user_error_text([&] { gpt2->forward(at::zeros({1, 5}, at::kLong)); }).find("longer than the 4 positions"),
              std::string::npos);
}

TEST(TransformerOps, Llama3InverseFrequenciesMatchTransformers) {
    const ModelConfig c = read_hf_config(std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama3_gqa/config.json");
    const NdArray want = read_npy(std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama3_gqa/rope_inv_freq.npy");
    const at::Tensor got = rope_inverse_frequencies(c);
    ASSERT_EQ(got.numel(), want.numel());
    const std::vector<float> w = want.to_floats();
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_FLOAT_EQ(got[i].item<float>(), w[static_cast<size_t>(i)]) << i;
    ModelConfig unscaled = c;
    unscaled.rope_scaling = {};
    EXPECT_FALSE(at::allclose(rope_inverse_frequencies(unscaled), got));  // the scaling matters here
}

TEST(TransformerOps, SlidingWindowVisibility) {
    const at::Tensor v = causal_visibility(5, 2, at::TensorOptions());
    const std::vector<std::vector<bool>> want = {
        {1, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {0, 1, 1, 0, 0}, {0, 0, 1, 1, 0}, {0, 0, 0, 1, 1}};
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j) EXPECT_EQ(v[i][j].item<bool>(), want[i][j]) << i << "," << j;
}

TEST(MeanPool, IgnoresPaddingAndAllPaddingRowsGiveZero) {
    const at::Tensor h = at::arange(12, at::kFloat).reshape({2, 3, 2});
    const at::Tensor mask = at::tensor({1, 1, 0, 0, 0, 0}, at::kLong).reshape({2, 3});
    const at::Tensor p = pool_sentence_embeddings(h, mask, SentenceEmbeddingConfig{});
    EXPECT_FLOAT_EQ(p[0][0].item<float>(), 1.0f);
    EXPECT_FLOAT_EQ(p[0][1].item<float>(), 2.0f);
    EXPECT_FLOAT_EQ(p[1][0].item<float>(), 0.0f);
}

}  // namespace
}  // namespace ql
