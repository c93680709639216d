// SPDX-License-Identifier: GPL-3.0-or-later
// Rotations (engine/quant/rotation.h): function-preserving on every architecture (FP outputs
// unchanged to 1e-5), refused where they do not apply, lowering W4A4 error where activations
// have outliers, surviving a checkpoint round trip, and folded away by the fakequant export.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include <cstdio>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/eval/evaluator.h"
#include "engine/export/fakequant_export.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/hadamard_transform.h"
#include "engine/quant/plain_weights.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"
#include "engine/quant/rotation.h"
#include "tests/engine/export_test_support.h"

namespace ql {
namespace {

// A small Llama whose sizes are not powers of two (hidden 96 = 3 x 32, MLP 160 = 5 x 32), grouped
// attention, random norm weights (so that R1's fold matters) and weights large enough that the
// logits are O(1).
ModelConfig small_llama(bool qwen2_biases = false, bool tied = false) {
    ModelConfig c = demo_decoder_config(40);
    c.name = "";
    c.hidden_size = 96;
    c.num_layers = 2;
    c.num_heads = 6;
    c.num_kv_heads = 2;
    c.head_dim = 16;
    c.intermediate_size = 160;
    c.tie_embeddings = tied;
    if (qwen2_biases) {
        c.architecture = c.model_type = "qwen2";
        c.attention_bias = true;
    }
    return c;
}

ModelConfig small_gpt2() {
    ModelConfig c = gpt2_small_config();
    c.name = "";
    c.vocab_size = 40;
    c.hidden_size = 96;
    c.num_layers = 2;
    c.num_heads = 6;
    c.num_kv_heads = 6;
    c.head_dim = 16;
    c.intermediate_size = 192;
    c.max_positions = 32;
    return c;
}

ModelConfig small_bert() {
    ModelConfig c;
    c.architecture = c.model_type = "bert";
    c.vocab_size = 40;
    c.hidden_size = 96;
    c.num_layers = 2;
    c.num_heads = 6;
    c.num_kv_heads = 6;
    c.head_dim = 16;
    c.intermediate_size = 192;
    c.max_positions = 32;
    c.type_vocab_size = 2;
    c.norm_eps = 1e-12;
    c.activation = "gelu";
    return c;
}

std::unique_ptr<Model> make_model(const ModelConfig& c, uint64_t seed = 3) {
    auto m = create_model(c, seed);
    at::NoGradGuard no_grad;
    at::manual_seed(static_cast<int64_t>(seed));
    for (auto& [name, t] : m->named_parameters()) {
        if (t.dim() == 2) t.mul_(6.0);  // weights ~ N(0, 0.12): logits O(1)
        if (name.find("norm") != std::string::npos && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0)
            t.copy_(at::rand_like(t) + 0.5);  // RMSNorm / LayerNorm weights in [0.5, 1.5)
        if (name.find("bias") != std::string::npos) t.copy_(at::randn_like(t) * 0.1);
    }
    return m;
}

at::Tensor ids_for(const Model& m, int64_t batch = 3, int64_t t = 12) {
    at::manual_seed(11);
    return at::randint(0, m.config().vocab_size, {batch, t}, at::kLong);
}

at::Tensor run(Model& m, const at::Tensor& ids) {
    c10::InferenceMode inference;
    return m.forward(ids).clone();
}

// A recipe whose quantizers are on but change nothing (fp32 passthrough), with a rotation.
Recipe passthrough_recipe(const std::string& rotation_json) {
    return parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "fp32"}},
        {"quantizer_name": "*input_quantizer", "cfg": {"format": "fp32"}},
        {"quantizer_name": "*lm_head*", "enable": false}], "rotation": )" + rotation_json + "}",
                        "test recipe");
}

double max_abs(const at::Tensor& t) { return t.abs().max().item<double>(); }

// Rotates a fresh model with `rotation_json` and checks that its outputs equal the original's.
RotationReport expect_function_preserved(const ModelConfig& c, const std::string& rotation_json) {
    auto original = make_model(c);
    auto rotated = make_model(c);
    const at::Tensor ids = ids_for(*original);
    const at::Tensor want = run(*original, ids);
    QuantizedModel q(*rotated, passthrough_recipe(rotation_json));
    const RotationReport r = rotate_model(q);
    const at::Tensor got = run(*rotated, ids);  // quantizers off: the FP function of the rotated model
    EXPECT_GT(max_abs(want), 0.5) << "logits too small for a meaningful check";
    EXPECT_LE(max_abs(got - want), 1e-5) << "max |logits| " << max_abs(want);
    // Something really changed in the weights.
    bool changed = false;
    const auto a = original->named_parameters(), b = rotated->named_parameters();
    for (size_t i = 0; i < a.size(); ++i) changed = changed || !at::equal(a[i].second, b[i].second);
    EXPECT_TRUE(changed);
    return r;
}

TEST(Rotation, HadamardPreservesLlamaOutputs) {
    const RotationReport r = expect_function_preserved(small_llama(), R"({"method": "hadamard", "qk": true})");
    ASSERT_EQ(r.applied.size(), 4u);  // R1, R2, R4, R3
    EXPECT_NE(r.applied[0].find("R1 residual stream: randomized Hadamard of 96 (3 blocks of 32"), std::string::npos) << r.applied[0];
    EXPECT_NE(r.applied[1].find("R2"), std::string::npos);
    EXPECT_NE(r.applied[2].find("R4 down_proj"), std::string::npos);
    EXPECT_EQ(r.online_layers, 2);
    EXPECT_TRUE(r.skipped.empty());
}

TEST(Rotation, FoldsRmsNormWeightsFirst) {
    auto m = make_model(small_llama());
    QuantizedModel q(*m, passthrough_recipe(R"({"method": "hadamard", "attention_head": false, "down_proj": false})"));
    rotate_model(q);
    for (const auto& [name, t] : m->named_parameters())
        if (name.find("layernorm") != std::string::npos || name == "model.norm.weight")
            EXPECT_TRUE(at::equal(t, at::ones_like(t))) << name;
}

TEST(Rotation, HadamardPreservesQwen2OutputsWithBiases) {
    expect_function_preserved(small_llama(/*qwen2_biases=*/true), R"({"method": "hadamard"})");
}

TEST(Rotation, HadamardOnGpt2AndBertRotatesHeadsAndDownProjectionOnly) {
    for (const ModelConfig& c : {small_gpt2(), small_bert()}) {
        SCOPED_TRACE(c.architecture);
        const RotationReport r = expect_function_preserved(c, R"({"method": "hadamard"})");
        ASSERT_EQ(r.skipped.size(), 1u);
        EXPECT_NE(r.skipped[0].find("LayerNorm"), std::string::npos) << r.skipped[0];
        EXPECT_EQ(r.online_layers, 2);
    }
}

TEST(Rotation, ModelOptimizerRotateBeforeQuantizePreservesOutputs) {
    const RotationReport r = expect_function_preserved(small_llama(), R"({"method": "rht"})");
    EXPECT_EQ(r.online_layers, 2 * 7);  // every quantized Linear (lm_head is excluded)
    expect_function_preserved(small_llama(), R"({"method": "rht", "block_size": 16})");
    expect_function_preserved(small_bert(), R"({"method": "rht", "block_size": 32})");
}

TEST(Rotation, RhtBlocksFollowModelOptimizerDefaults) {
    auto m = make_model(small_llama());
    QuantizedModel q(*m, passthrough_recipe(R"({"method": "rht"})"));
    std::map<std::string, int64_t> blocks;
    for (const auto& [layer, r] : online_rotations(q)) blocks[layer->name] = r.block;
    EXPECT_EQ(blocks.at("model.layers.0.self_attn.q_proj"), 32);  // 96 = 3 x 32: largest power-of-two divisor
    EXPECT_EQ(blocks.at("model.layers.0.self_attn.o_proj"), 32);
    EXPECT_EQ(blocks.at("model.layers.0.mlp.down_proj"), 32);    // 160 = 5 x 32
    EXPECT_EQ(blocks.count("lm_head"), 0u);                       // not quantized
}

TEST(Rotation, OnlineRotationIsTheKernelsAndDifferentiable) {
    auto m = make_model(small_llama());
    QuantizedModel q(*m, passthrough_recipe(R"({"method": "hadamard", "residual": false, "attention_head": false})"));
    rotate_model(q);
    QuantizableLayer* down = m->find_layer("model.layers.0.mlp.down_proj");
    ASSERT_TRUE(down->input_rotation);
    at::Tensor x = at::randn({5, 160}).requires_grad_(true);
    const at::Tensor y = down->input_rotation(x);
    // Forward: the kernel's result bit for bit.
    EXPECT_TRUE(at::equal(y.detach(), hadamard_transform(x.detach(), HadamardRotation{32, at::Tensor()})));
    // Backward: the gradient of x H (H symmetric): g H.
    const at::Tensor g = at::randn({5, 160});
    y.backward(g);
    const at::Tensor h = hadamard_matrix(32);
    const at::Tensor want = at::matmul(g.reshape({5, 5, 32}), h).reshape({5, 160});
    EXPECT_TRUE(at::allclose(x.grad(), want, 1e-6, 1e-6));
}

TEST(Rotation, RefusesWhatTheArchitectureDoesNotAllow) {
    {
        auto m = make_model(small_gpt2());
        QuantizedModel q(*m, passthrough_recipe(R"({"method": "hadamard", "residual": true})"));
        EXPECT_THROW(
            {
                try {
                    rotate_model(q);
                } catch (const UserError& e) {
                    EXPECT_NE(std::string(e.what()).find("rotation.residual: the model normalises with LayerNorm"), std::string::npos)
                        << e.what();
                    throw;
                }
            },
            UserError);
    }
    {
        auto m = make_model(small_llama(false, /*tied=*/true));
        QuantizedModel q(*m, passthrough_recipe(R"({"method": "hadamard", "residual": true})"));
        EXPECT_THROW(rotate_model(q), UserError);
        // Unasked, R1 is skipped on a tied model and the rest applies.
        QuantizedModel q2(*m, passthrough_recipe(R"({"method": "hadamard"})"));
        const RotationReport r = rotate_model(q2);
        ASSERT_EQ(r.skipped.size(), 1u);
        EXPECT_NE(r.skipped[0].find("lm_head shares the embedding"), std::string::npos);
    }
    {
        auto m = make_model(small_llama());
        QuantizedModel q(*m, passthrough_recipe(R"({"method": "rht", "block_size": 64})"));  // 64 does not divide 96
        EXPECT_THROW(rotate_model(q), UserError);
    }
    {
        auto m = make_model(small_bert());
        EXPECT_THROW({ QuantizedModel q(*m, passthrough_recipe(R"({"method": "hadamard", "qk": true})")); }, UserError);
    }
    EXPECT_THROW(passthrough_recipe(R"({"method": "rht", "residual": true})"), UserError);
    EXPECT_THROW(passthrough_recipe(R"({"method": "hadamard", "block_size": 16})"), UserError);
    EXPECT_THROW(passthrough_recipe(R"({"method": "rht", "block_size": 24})"), UserError);
    EXPECT_THROW(passthrough_recipe(R"({"method": "spin"})"), UserError);
}

TEST(Rotation, RecipeSectionRoundTripsAndOverlays) {
    const Recipe r = passthrough_recipe(R"({"method": "hadamard", "down_proj": false, "qk": true, "seed": 5})");
    const Recipe again = parse_recipe(recipe_to_json(r), "again");
    EXPECT_EQ(again.rotation.method, "hadamard");
    EXPECT_EQ(again.rotation.down_proj, std::optional<bool>(false));
    EXPECT_FALSE(again.rotation.residual.has_value());
    EXPECT_TRUE(again.rotation.qk);
    EXPECT_EQ(again.rotation.seed, 5u);
    Recipe o = load_recipe("NVFP4_DEFAULT");
    overlay_recipe(o, "", "rht");
    EXPECT_EQ(o.rotation.method, "rht");
    EXPECT_EQ(o.name, "NVFP4_DEFAULT-rotate_rht");
    overlay_recipe(o, "", "none");
    EXPECT_FALSE(o.rotation.enabled());
    EXPECT_THROW(overlay_recipe(o, "", "quarot"), UserError);
    EXPECT_EQ(passthrough_recipe(R"("hadamard")").rotation.describe(), "hadamard (R1 R2 R4)");
}

// W4A4 on a model with activation outlier channels injected without changing its function, as
// scripts/inject-outliers does to the demo for docs/RESULTS.md (input_layernorm channels x40 and
// x-40, the q/k/v input columns divided by the same factors): the Hadamard rotation (R1 folds the
// norms first, then rotates) brings the error back down.
TEST(Rotation, LowersW4A4ErrorOnAModelWithInjectedOutliers) {
    const ModelConfig c = small_llama();
    auto outlier_model = [&] {
        auto m = make_model(c);
        at::NoGradGuard no_grad;
        for (auto& [name, t] : m->named_parameters()) {
            const bool norm = name.find("input_layernorm.weight") != std::string::npos;
            const bool qkv = name.find("self_attn.q_proj.weight") != std::string::npos ||
                             name.find("self_attn.k_proj.weight") != std::string::npos ||
                             name.find("self_attn.v_proj.weight") != std::string::npos;
            for (const auto& [channel, f] : {std::pair<int64_t, double>{3, 40.0}, {17, -40.0}}) {
                if (norm) t.select(0, channel).mul_(f);
                if (qkv) t.select(1, channel).div_(f);
            }
        }
        return m;
    };
    auto fp = make_model(c);
    at::manual_seed(2);
    auto tokens = [&](int64_t n) {
        Dataset d;
        d.name = "random tokens";
        d.inputs = at::randint(0, c.vocab_size, {n, 24}, at::kLong);
        d.targets = at::full({n, 24}, Dataset::kIgnoreIndex, at::kLong);
        d.targets.narrow(1, 0, 23).copy_(d.inputs.narrow(1, 1, 23));
        return d;
    };
    const Dataset calib = tokens(16), eval = tokens(16);
    NullJobSink sink;
    CancellationToken cancel;
    // The injection leaves the FP function unchanged.
    {
        auto injected = outlier_model();
        EXPECT_LT(evaluate(*injected, fp.get(), eval, EvalOptions{}, sink, cancel).overall.kl.value(), 1e-6);  // float rounding of the rescaled columns
    }
    auto kl_of = [&](const std::string& quant_cfg, const std::string& rotation) {
        auto m = outlier_model();
        QuantizedModel q(*m, parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*", "enable": false}, )" + quant_cfg +
                                              R"(, {"quantizer_name": "*lm_head*", "enable": false}])" +
                                              (rotation.empty() ? "" : R"(, "rotation": )" + rotation) + "}",
                                          "w4a4"));
        run_ptq_pipeline(q, calib, PtqOptions{}, sink, cancel);
        return evaluate(*m, fp.get(), eval, EvalOptions{}, sink, cancel).overall.kl.value();
    };
    const std::string nvfp4 = R"({"quantizer_name": "*weight_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "*input_quantizer", "cfg": {"format": "nvfp4"}})";
    const std::string int4 = R"({"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
        {"quantizer_name": "*input_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32, "dynamic": true}})";
    for (const auto& [label, cfg] : {std::pair<const char*, std::string>{"nvfp4", nvfp4}, {"int4 g32", int4}}) {
        const double plain = kl_of(cfg, ""), rotated = kl_of(cfg, R"("hadamard")");
        std::printf("W4A4 %s on the outlier model: KL %.4g plain, %.4g with the Hadamard rotation\n", label, plain, rotated);
        EXPECT_LT(rotated, 0.8 * plain) << label;
    }
}

TEST(Rotation, CheckpointReloadsBitIdenticallyWithoutRotatingTwice) {
    test::QuantizedTiny t = test::quantize_tiny(
        R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
            {"quantizer_name": "*input_quantizer", "cfg": {"format": "int8"}},
            {"quantizer_name": "*lm_head*", "enable": false}], "rotation": "hadamard", "kv_cache": "fp8"})");
    const Dataset d = test::tokens_for(t.opened, 4, 9);
    const at::Tensor before = test::logits(*t.opened.model, d);
    const std::string dir = test::temp_dir("rotation-ckpt") + "/ckpt";
    save_quantized_checkpoint(*t.q, t.opened.path, dir, false);
    OpenedModel back = open_model(dir);
    ASSERT_TRUE(back.quantization);
    EXPECT_TRUE(back.quantization->rotated());
    EXPECT_TRUE(at::equal(test::logits(*back.model, d), before));
    // Quantizers off: the reloaded rotated model is the FP function again.
    back.quantization->set_enabled(false);
    OpenedModel fp = open_model(test::tiny_llama());
    EXPECT_LE(max_abs(test::logits(*back.model, d) - test::logits(*fp.model, d)), 1e-5);
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(Rotation, OnlineRotationsAreNotPlainWeightsAndFoldIntoTheFakequantExport) {
    test::QuantizedTiny t = test::quantize_tiny(
        R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "nvfp4"}},
            {"quantizer_name": "*lm_head*", "enable": false}], "rotation": "hadamard"})");
    const std::string why = plain_weights_refusal(*t.q);
    EXPECT_NE(why.find("mlp.down_proj has an online Hadamard rotation"), std::string::npos) << why;
    const std::string dir = test::temp_dir("rotation-fq") + "/fq";
    NullJobSink sink;
    CancellationToken cancel;
    const FolderExportResult r = export_fakequant(*t.q, t.opened.path, dir, false, sink, cancel);
    bool warned = false;
    for (const auto& w : r.warnings) warned = warned || w.find("rotate their input online") != std::string::npos;
    EXPECT_TRUE(warned);
    // The export is a plain HF model computing the weight-quantized rotated model.
    OpenedModel exported = open_model(dir);
    EXPECT_FALSE(exported.quantization);
    const Dataset d = test::tokens_for(t.opened, 4, 9);
    EXPECT_LE(max_abs(test::logits(*exported.model, d) - test::logits(*t.opened.model, d)), 1e-4);
    // Fused rotations only (R1, R2) are plain weights.
    test::QuantizedTiny fused = test::quantize_tiny(
        R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "nvfp4"}},
            {"quantizer_name": "*lm_head*", "enable": false}], "rotation": {"method": "hadamard", "down_proj": false}})");
    EXPECT_EQ(plain_weights_refusal(*fused.q), "");
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

}  // namespace
}  // namespace ql
