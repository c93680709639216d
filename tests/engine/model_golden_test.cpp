// SPDX-License-Identifier: GPL-3.0-or-later
// QuantLab's models against transformers: tests/data/models/<name>/ holds a tiny random model
// saved by transformers and its outputs for fixed inputs (scripts/golden/make_model_golden.py,
// versions in tests/data/models/manifest.json). Criterion, in float32: the relative error
// max|ours - theirs| / max|theirs| <= 1e-4 over the whole output tensor, and elementwise
// |ours - theirs| <= 1e-4 * |theirs| + 1e-5 * max|theirs|.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "engine/core/errors.h"
#include "engine/io/npy_file.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/models/bert_model.h"
#include "engine/models/model.h"
#include "engine/models/sentence_pooling.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

const std::string kModels = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/";

at::Tensor npy_tensor(const std::string& path) {
    const NdArray a = read_npy(path);
    at::ScalarType t = at::kFloat;
    if (a.dtype == DType::Int64) t = at::kLong;
    else if (a.dtype != DType::Float32) throw std::runtime_error(path + ": unexpected dtype");
    return at::from_blob(const_cast<uint8_t*>(a.bytes.data()), a.shape, t).clone();
}

at::Tensor golden(const std::string& model, const std::string& array) {
    return npy_tensor(kModels + model + "/" + array + ".npy");
}

// The golden model's file as transformers wrote it: name -> owned float32 tensor.
std::map<std::string, at::Tensor> checkpoint_tensors(const std::string& model) {
    const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(kModels + model);
    std::map<std::string, at::Tensor> state;
    for (const std::string& name : checkpoint.names()) state[name] = load_float32(checkpoint, name);
    return state;
}

std::unique_ptr<Model> load_golden_model(const std::string& model) { return load_hf_model(kModels + model); }

double relative_error(const at::Tensor& got, const at::Tensor& want) {
    return (got - want).abs().max().item<double>() / want.abs().max().item<double>();
}

::testing::AssertionResult matches(const at::Tensor& got, const at::Tensor& want) {
    if (got.sizes() != want.sizes())
        return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
    const double rel = relative_error(got, want);
    const double scale = want.abs().max().item<double>();
    const at::Tensor bad = (got - want).abs() > want.abs() * 1e-4 + 1e-5 * scale;
    const int64_t n_bad = bad.sum().item<int64_t>();
    std::printf("    relative error %.3g (max |expected| %.3g)\n", rel, scale);
    if (rel > 1e-4 || n_bad > 0)
        return ::testing::AssertionFailure() << "relative error " << rel << ", " << n_bad << " elements out of tolerance";
    return ::testing::AssertionSuccess();
}

void expect_logits_match(const std::string& model) {
    auto m = load_golden_model(model);
    const at::Tensor logits = m->forward(golden(model, "input_ids"));
    EXPECT_TRUE(matches(logits, golden(model, "logits"))) << model;
}

TEST(ModelGolden, Gpt2LogitsMatchTransformers) { expect_logits_match("gpt2"); }
TEST(ModelGolden, LlamaLogitsMatchTransformers) { expect_logits_match("llama"); }
TEST(ModelGolden, Llama3RopeScalingWithGqaAndTiedEmbeddingsMatchesTransformers) { expect_logits_match("llama3_gqa"); }
TEST(ModelGolden, MistralSlidingWindowMatchesTransformers) { expect_logits_match("mistral_swa"); }
TEST(ModelGolden, Qwen2WithQkvBiasMatchesTransformers) { expect_logits_match("qwen2"); }
TEST(ModelGolden, Qwen3WithQkNormMatchesTransformers) { expect_logits_match("qwen3"); }
TEST(ModelGolden, Gemma3SlidingAndGlobalLayersMatchTransformers) { expect_logits_match("gemma3_text"); }

TEST(ModelGolden, Gemma3ConfigIsReadWithItsFeatures) {
    const ModelConfig c = read_hf_config(kModels + "gemma3_text/config.json");
    EXPECT_EQ(c.architecture, "gemma3");
    EXPECT_EQ(c.sliding_layers, (std::vector<bool>{true, false, true}));
    EXPECT_EQ(c.sliding_window, 4);
    EXPECT_EQ(c.rope_theta, 1000000.0);
    EXPECT_EQ(c.rope_scaling.type, "linear");
    EXPECT_EQ(c.rope_scaling.factor, 8.0);
    EXPECT_EQ(c.rope_local_theta, 10000.0);
    EXPECT_EQ(c.query_pre_attn_scalar, 24.0);
    EXPECT_TRUE(c.qk_norm);
    EXPECT_TRUE(c.tie_embeddings);
    EXPECT_EQ(c.activation, "gelu_pytorch_tanh");
    // The legacy layout of the Hub's gemma-3-270m config.json (rope_local_base_freq, no
    // layer_types: every 6th layer global).
    const ModelConfig legacy = parse_hf_config(R"({"model_type": "gemma3_text", "vocab_size": 96, "hidden_size": 48,
        "intermediate_size": 80, "num_hidden_layers": 7, "num_attention_heads": 4, "num_key_value_heads": 1,
        "head_dim": 32, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": null,
        "sliding_window": 512, "query_pre_attn_scalar": 256})", "legacy");
    EXPECT_EQ(legacy.sliding_layers, (std::vector<bool>{true, true, true, true, true, false, true}));
    EXPECT_TRUE(legacy.rope_scaling.type.empty());
    const std::string multimodal = test::user_error_text([] {
        parse_hf_config(R"({"model_type": "gemma3", "text_config": {}})", "g/config.json");
    });
    EXPECT_NE(multimodal.find("g/config.json: key 'model_type': 'gemma3' (Gemma3ForConditionalGeneration"), std::string::npos)
        << multimodal;
}

// forward == head(run_block(..., embed(ids))), bit for bit, for every decoder: what the
// layer-by-layer PTQ pipeline relies on.
TEST(ModelGolden, BlockByBlockForwardEqualsTheForward) {
    for (const char* name : {"gpt2", "llama", "llama3_gqa", "mistral_swa", "qwen2", "qwen3", "gemma3_text"}) {
        auto m = load_golden_model(name);
        const at::Tensor ids = golden(name, "input_ids");
        ASSERT_EQ(m->block_count(), m->config().num_layers) << name;
        at::Tensor x = m->embed(ids);
        for (int64_t b = 0; b < m->block_count(); ++b) x = m->run_block(b, x);
        EXPECT_TRUE(at::equal(m->head(x), m->forward(ids))) << name;
        EXPECT_EQ(m->block_parameter_names(1).front().rfind(name == std::string("gpt2") ? "transformer.h.1." : "model.layers.1.", 0), 0u)
            << name;
    }
    auto bert = load_golden_model("bert");
    EXPECT_EQ(bert->block_count(), 0);
    EXPECT_THROW(bert->embed(golden("bert", "input_ids")), std::logic_error);
}

TEST(ModelGolden, BertHiddenStatesAndMeanPoolingMatchTransformers) {
    auto m = load_golden_model("bert");
    auto* bert = dynamic_cast<BertModel*>(m.get());
    ASSERT_NE(bert, nullptr);
    const at::Tensor mask = golden("bert", "attention_mask");
    const at::Tensor hidden = bert->encode(golden("bert", "input_ids"), mask, golden("bert", "token_type_ids"));
    EXPECT_TRUE(matches(hidden, golden("bert", "last_hidden_state")));
    EXPECT_TRUE(matches(pool_sentence_embeddings(hidden, mask, SentenceEmbeddingConfig{}), golden("bert", "mean_pooled")));
}

TEST(ModelGolden, BertCheckpointsWithBertPrefixLoadTheSame) {
    auto plain = load_golden_model("bert");
    std::map<std::string, at::Tensor> prefixed;
    for (const auto& [name, t] : checkpoint_tensors("bert")) prefixed["bert." + name] = t;
    prefixed["cls.predictions.bias"] = at::zeros({120});
    auto m = create_model(plain->config(), 1);
    const LoadReport report = load_state(*m, prefixed, "prefixed");
    EXPECT_EQ(report.ignored, (std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight",
                                                        "cls.predictions.bias"}));
    const at::Tensor ids = golden("bert", "input_ids");
    EXPECT_TRUE(at::equal(m->forward(ids), plain->forward(ids)));
}

TEST(ModelGolden, Gpt2CheckpointsWithoutTransformerPrefixAndWithMaskBuffersLoadTheSame) {
    auto plain = load_golden_model("gpt2");
    std::map<std::string, at::Tensor> hub_style;  // GPT2Model as saved by older transformers
    for (const auto& [name, t] : checkpoint_tensors("gpt2")) hub_style[name.substr(std::string("transformer.").size())] = t;
    hub_style["h.0.attn.bias"] = at::ones({1, 1, 32, 32});
    hub_style["h.0.attn.masked_bias"] = at::full({}, -1e4);
    auto m = create_model(plain->config(), 1);
    EXPECT_EQ(load_state(*m, hub_style, "hub").ignored.size(), 2u);
    const at::Tensor ids = golden("gpt2", "input_ids");
    EXPECT_TRUE(at::equal(m->forward(ids), plain->forward(ids)));
}

TEST(ModelGolden, Gpt2FileStateIsTheCheckpointLayoutAndLinearsAreOutIn) {
    auto m = load_golden_model("gpt2");
    const auto file = checkpoint_tensors("gpt2");
    const auto state = m->file_state();
    ASSERT_EQ(state.size(), file.size());  // tied lm_head not written, like transformers
    for (const auto& [name, t] : state) {
        ASSERT_TRUE(file.count(name)) << name;
        EXPECT_TRUE(at::equal(t, file.at(name))) << name;
    }
    const auto* c_fc = dynamic_cast<LinearLayer*>(m->find_layer("transformer.h.1.mlp.c_fc"));
    ASSERT_NE(c_fc, nullptr);
    EXPECT_EQ(c_fc->weight.sizes(), (at::IntArrayRef{128, 32}));  // [out, in]
    EXPECT_TRUE(c_fc->file_layout_in_out);
    EXPECT_TRUE(at::equal(c_fc->file_weight(), file.at("transformer.h.1.mlp.c_fc.weight")));
    const auto* lm_head = dynamic_cast<LinearLayer*>(m->find_layer("lm_head"));
    ASSERT_NE(lm_head, nullptr);
    EXPECT_TRUE(lm_head->weight.is_same(m->find_layer("transformer.wte")->weight));
}

TEST(ModelGolden, LayerNamesAreTheHfModuleNames) {
    auto llama = load_golden_model("qwen2");
    std::vector<std::string> names;
    for (const LinearLayer* l : llama->linear_layers()) names.push_back(l->name);
    ASSERT_EQ(names.size(), 2u * 7 + 1);
    EXPECT_EQ(names.front(), "model.layers.0.self_attn.q_proj");
    EXPECT_EQ(names[6], "model.layers.0.mlp.down_proj");
    EXPECT_EQ(names.back(), "lm_head");
    EXPECT_TRUE(llama->find_layer("model.layers.1.self_attn.k_proj")->bias.defined());
    EXPECT_FALSE(llama->find_layer("model.layers.1.self_attn.o_proj")->bias.defined());
    EXPECT_EQ(llama->embedding_layers().front()->name, "model.embed_tokens");
    auto bert = load_golden_model("bert");
    EXPECT_NE(bert->find_layer("encoder.layer.1.attention.self.value"), nullptr);
    EXPECT_NE(bert->find_layer("encoder.layer.0.output.dense"), nullptr);
    EXPECT_NE(bert->find_layer("embeddings.token_type_embeddings"), nullptr);
}

TEST(ModelGolden, ShardedAndBFloat16CheckpointsLoad) {
    char tmpl[] = "/tmp/quantlab-models-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string src = kModels + "llama3_gqa/config.json";
    std::string config;
    {
        FILE* f = std::fopen(src.c_str(), "rb");
        ASSERT_NE(f, nullptr);
        char buf[4096];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) config.append(buf, n);
        std::fclose(f);
        FILE* g = std::fopen((dir + "/config.json").c_str(), "wb");
        std::fwrite(config.data(), 1, config.size(), g);
        std::fclose(g);
    }
    // Shards of at most 64 KiB, weights stored as bfloat16 (as most Hub checkpoints are).
    std::vector<at::Tensor> keep;
    std::vector<SafetensorsWriteEntry> entries;
    for (const auto& [name, t] : checkpoint_tensors("llama3_gqa")) {
        keep.push_back(t.to(at::kBFloat16).contiguous());
        entries.push_back(safetensors_entry(name, keep.back()));
    }
    const auto written = write_safetensors_checkpoint(dir, entries, 64 << 10);
    ASSERT_GT(written.size(), 2u);  // several shards and the index
    auto m = load_hf_model(dir);
    const at::Tensor logits = m->forward(golden("llama3_gqa", "input_ids"));
    // bfloat16 weights: ~3 significant digits.
    EXPECT_LT(relative_error(logits, golden("llama3_gqa", "logits")), 0.05);
    // Weights as stored: the matrices stay BF16 views of the files (norms become float32), and
    // the logits are those of float32 copies of the same values, bit for bit.
    EXPECT_EQ(m->find_layer("model.embed_tokens")->weight.scalar_type(), at::kBFloat16);
    EXPECT_EQ(m->find_layer("model.layers.0.mlp.down_proj")->weight.scalar_type(), at::kBFloat16);
    EXPECT_TRUE(m->find_layer("lm_head")->weight.is_same(m->find_layer("model.embed_tokens")->weight));  // tied
    EXPECT_FALSE(m->parameters_float32());
    auto copy = load_hf_model(dir, WeightStorage::Float32Copy);
    EXPECT_TRUE(copy->parameters_float32());
    EXPECT_EQ(copy->find_layer("model.embed_tokens")->weight.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(copy->forward(golden("llama3_gqa", "input_ids")), logits));
    // Matrices at 2 bytes against 4; the five norm vectors (2 per block, the final one) float32 in both.
    EXPECT_EQ(2 * m->parameter_bytes() - copy->parameter_bytes(), 4 * 5 * 64);
    // Edits in place need an owned float32 weight: the tied pair moves together.
    m->make_weight_float32(*m->find_layer("lm_head"));
    EXPECT_EQ(m->find_layer("model.embed_tokens")->weight.scalar_type(), at::kFloat);
    EXPECT_TRUE(m->find_layer("lm_head")->weight.is_same(m->find_layer("model.embed_tokens")->weight));
    EXPECT_THROW(m->set_requires_grad(true), std::logic_error);  // training needs Float32Copy
    m->make_parameters_float32();
    EXPECT_TRUE(m->parameters_float32());
    EXPECT_TRUE(at::equal(m->forward(golden("llama3_gqa", "input_ids")), logits));
    for (const std::string& f : written) std::remove(f.c_str());
    std::remove((dir + "/config.json").c_str());
    rmdir(dir.c_str());
}

TEST(ModelGolden, LoadHfModelErrorsNameTheProblem) {
    auto message = [](const std::string& folder) -> std::string {
        try {
            load_hf_model(folder);
        } catch (const UserError& e) {
            return e.what();
        }
        return "no error";
    };
    EXPECT_NE(message("/nonexistent/model").find("/nonexistent/model: not a model folder"), std::string::npos);
    char tmpl[] = "/tmp/quantlab-models-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    EXPECT_NE(message(dir).find(dir + "/config.json: cannot open"), std::string::npos);
    FILE* f = std::fopen((dir + "/config.json").c_str(), "wb");
    const std::string cfg = R"({"model_type": "gpt2", "vocab_size": 100, "n_embd": 32, "n_layer": 2, "n_head": 4,
                                "n_positions": 32})";
    std::fwrite(cfg.data(), 1, cfg.size(), f);
    std::fclose(f);
    const std::string no_weights = message(dir);
    EXPECT_NE(no_weights.find(dir), std::string::npos) << no_weights;
    EXPECT_EQ(no_weights.find("no error"), std::string::npos);
    // The GPT-2 golden weights under a config with other shapes: the first mismatch is named.
    const auto state = checkpoint_tensors("gpt2");
    std::vector<SafetensorsWriteEntry> entries;
    for (const auto& [name, t] : state) entries.push_back(safetensors_entry(name, t));
    write_safetensors(dir + "/model.safetensors", entries);
    auto m = load_hf_model(dir);  // same shapes: loads
    std::remove((dir + "/config.json").c_str());
    f = std::fopen((dir + "/config.json").c_str(), "wb");
    const std::string wider = R"({"model_type": "gpt2", "vocab_size": 100, "n_embd": 32, "n_layer": 2, "n_head": 4,
                                  "n_positions": 32, "n_inner": 64})";
    std::fwrite(wider.data(), 1, wider.size(), f);
    std::fclose(f);
    EXPECT_NE(message(dir).find("model.safetensors: tensor 'transformer.h.0.mlp.c_fc.bias' has shape [128], expected [64]"),
              std::string::npos) << message(dir);
    std::remove((dir + "/config.json").c_str());
    std::remove((dir + "/model.safetensors").c_str());
    rmdir(dir.c_str());
}

}  // namespace
}  // namespace ql
