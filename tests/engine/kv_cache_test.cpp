// SPDX-License-Identifier: GPL-3.0-or-later
// KV-cache quantization (engine/quant/kv_cache_quantizer.h): where it sits (K after RoPE, V,
// before attention), its numerics for each format and granularity, calibration, memory, the
// recipe section and --kv-cache overlays, checkpoints, training gradients and the hf-modelopt
// export's k_scale / v_scale.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/models/builtin_models.h"
#include "engine/models/transformer_ops.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/kv_cache_quantizer.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"
#include "engine/quant/rotation.h"
#include "tests/engine/export_test_support.h"

namespace ql {
namespace {

std::string w4_recipe(const std::string& kv_json) {
    return R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "*lm_head*", "enable": false}], "calibration": {"samples": 8}, "kv_cache": )" + kv_json + "}";
}

AttentionSite site_of(int64_t kv_heads = 2, int64_t head_dim = 32) {
    AttentionSite s;
    s.name = "model.layers.0.self_attn";
    s.num_heads = 2 * kv_heads;
    s.num_kv_heads = kv_heads;
    s.head_dim = head_dim;
    return s;
}

// One E4M3 rounding written out (saturating, ties to even) from the grid, independent of the
// kernels: the nearest of the 253 finite magnitudes.
float e4m3_reference(float x) {
    static const std::vector<float> grid = [] {
        std::vector<float> g;
        for (int e = 0; e < 16; ++e)
            for (int m = 0; m < 8; ++m) {
                if (e == 15 && m == 7) continue;  // NaN
                g.push_back(e == 0 ? std::ldexp(static_cast<float>(m) / 8.0f, -6)
                                   : std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7));
            }
        return g;
    }();
    const float a = std::fabs(x);
    if (a >= 448.0f) return std::copysign(448.0f, x);
    size_t best = 0;
    for (size_t i = 1; i < grid.size(); ++i) {
        const float d = std::fabs(grid[i] - a), db = std::fabs(grid[best] - a);
        if (d < db || (d == db && (i % 2 == 0))) best = i;  // even mantissa code on ties
    }
    return std::copysign(grid[best], x);
}

TEST(KvCacheQuantizer, Fp8PerTensorIsScaledE4m3WithTheCalibratedAmax) {
    AttentionSite site = site_of();
    KvCacheSettings s = kv_cache_preset("fp8");
    KvCacheQuantizer kv(site, s, false);
    EXPECT_TRUE(kv.needs_amax());
    kv.set_amax({3.5f}, {2.0f});
    at::manual_seed(1);
    const at::Tensor k = at::randn({2, 2, 5, 32}) * 1.3;
    const at::Tensor got = kv.quantize_key(k).contiguous();
    const float scale = 3.5f / 448.0f;
    const float* x = k.contiguous().data_ptr<float>();
    const float* y = got.data_ptr<float>();
    for (int64_t i = 0; i < k.numel(); ++i) ASSERT_EQ(y[i], e4m3_reference(x[i] / scale) * scale) << i;
    EXPECT_FLOAT_EQ(kv.key_scale()[0], 3.5f / 448.0f);  // Model Optimizer's k_scale: amax / 448
    EXPECT_FLOAT_EQ(kv.value_scale()[0], 2.0f / 448.0f);
}

TEST(KvCacheQuantizer, ConstantAmaxIsAPlainCast) {
    AttentionSite site = site_of();
    KvCacheQuantizer kv(site, kv_cache_preset("fp8_cast"), false);
    EXPECT_FALSE(kv.needs_amax());
    EXPECT_EQ(kv.key_amax(), std::vector<float>{448.0f});
    const at::Tensor k = at::tensor({0.3f, -1000.0f, 17.3f, 1e-4f}).reshape({1, 1, 1, 4});
    AttentionSite one = site_of(1, 4);
    KvCacheQuantizer cast(one, kv_cache_preset("fp8_cast"), false);
    const at::Tensor q = cast.quantize_key(k).reshape({-1});
    EXPECT_EQ(q[0].item<float>(), e4m3_reference(0.3f));
    EXPECT_EQ(q[1].item<float>(), -448.0f);  // saturates
    EXPECT_EQ(q[2].item<float>(), e4m3_reference(17.3f));
    EXPECT_EQ(cast.key_scale()[0], 1.0f);
}

TEST(KvCacheQuantizer, PerHeadScalesUseEachHeadsAmax) {
    AttentionSite site = site_of(2, 8);
    KvCacheQuantizer kv(site, kv_cache_preset("fp8_head"), false);
    EXPECT_EQ(kv.amax_count(), 2);
    kv.set_amax({1.0f, 100.0f}, {1.0f, 1.0f});
    at::manual_seed(3);
    const at::Tensor k = at::randn({1, 2, 3, 8});
    const at::Tensor q = kv.quantize_key(k);
    for (int64_t h = 0; h < 2; ++h) {
        QuantSpec spec = kv.spec();
        spec.fixed_amax = h == 0 ? 1.0f : 100.0f;
        EXPECT_TRUE(at::equal(q.select(1, h), fake_quantize(k.select(1, h), spec))) << h;
    }
    EXPECT_THROW(kv.set_amax({1.0f}, {1.0f}), UserError);  // one per head
}

TEST(KvCacheQuantizer, Nvfp4BlocksRunAlongHeadDimWithTheCalibratedGlobalScale) {
    AttentionSite site = site_of(2, 32);
    KvCacheQuantizer kv(site, kv_cache_preset("nvfp4"), false);
    EXPECT_EQ(kv.spec().block, 16);
    kv.set_amax({6.0f}, {6.0f});
    at::manual_seed(4);
    const at::Tensor k = at::randn({2, 2, 7, 32});
    const at::Tensor q = kv.quantize_key(k);
    // Every 16 consecutive head_dim elements of one token share a block: fake quantization of the
    // rows [tokens, 32] with the fixed global amax.
    QuantSpec spec = kv.spec();
    spec.fixed_amax = 6.0f;
    EXPECT_TRUE(at::equal(q, fake_quantize(k.reshape({-1, 32}), spec).reshape(k.sizes())));
    // k_scale follows Model Optimizer: amax / 448 for NVFP4 too (the FP8 range the kernel upcasts to).
    EXPECT_FLOAT_EQ(kv.key_scale()[0], 6.0f / 448.0f);
    EXPECT_DOUBLE_EQ(kv.settings().bits_per_element(32), 4.5);
}

TEST(KvCacheQuantizer, Int4GroupsAreDynamicPerToken) {
    AttentionSite site = site_of(2, 32);
    KvCacheQuantizer kv(site, kv_cache_preset("int4"), false);
    EXPECT_FALSE(kv.needs_amax());
    EXPECT_EQ(kv.amax_count(), 0);
    const at::Tensor k = at::randn({1, 2, 4, 32});
    const at::Tensor q = kv.quantize_key(k);
    const at::Tensor row = q.reshape({-1, 32}).select(0, 0).contiguous();
    const std::set<float> levels(row.data_ptr<float>(), row.data_ptr<float>() + 32);
    EXPECT_LE(levels.size(), 15u);  // symmetric INT4: at most 15 levels times one scale
    EXPECT_DOUBLE_EQ(kv.settings().bits_per_element(32), 4.5);  // 4 bits + an FP16 scale per 32
    KvCacheSettings bad = kv_cache_preset("int4");
    bad.group_size = 24;
    EXPECT_THROW({ KvCacheQuantizer k2(site, bad, false); }, UserError);  // 24 does not divide 32
}

// The hook sits where the KV cache is: K after RoPE, V as projected.
TEST(KvCacheQuantizer, SeesKeysAfterRopeAndValuesBeforeAttention) {
    OpenedModel m = open_model(test::tiny_llama());
    Model& model = *m.model;
    ASSERT_EQ(model.attention_sites().size(), 2u);
    AttentionSite& site = *model.attention_sites()[0];
    EXPECT_EQ(site.name, "model.layers.0.self_attn");
    at::Tensor seen_k, seen_v;
    site.hook = [&](at::Tensor&, at::Tensor& k, at::Tensor& v) {
        seen_k = k.clone();
        seen_v = v.clone();
    };
    const Dataset d = test::tokens_for(m, 2, 5, 10);
    test::logits(model, d);
    site.hook = nullptr;
    c10::InferenceMode inference;
    const ModelConfig& c = model.config();
    std::map<std::string, at::Tensor> p;
    for (auto& [n, t] : model.named_parameters()) p[n] = t;
    const at::Tensor x = at::embedding(p.at("model.embed_tokens.weight"), d.inputs);
    const at::Tensor a = rms_norm(x, NormParams{p.at("model.layers.0.input_layernorm.weight"), at::Tensor()}, c.norm_eps);
    const RopeTables rope = rope_tables(c, d.inputs.size(1));
    const at::Tensor k = apply_rope(split_heads(at::linear(a, p.at("model.layers.0.self_attn.k_proj.weight")), c.num_kv_heads, c.head_dim), rope);
    const at::Tensor v = split_heads(at::linear(a, p.at("model.layers.0.self_attn.v_proj.weight")), c.num_kv_heads, c.head_dim);
    EXPECT_TRUE(at::allclose(seen_k, k, 1e-6, 1e-6));
    EXPECT_TRUE(at::allclose(seen_v, v, 1e-6, 1e-6));
}

TEST(KvCacheQuantization, PtqCalibratesTheMaxAmaxAndReportsMemory) {
    test::QuantizedTiny t = test::quantize_tiny(w4_recipe(R"({"format": "fp8_e4m3", "granularity": "head"})"));
    ASSERT_EQ(t.q->kv_caches().size(), 2u);
    // Re-observe the calibration data: the calibrated amax is the max |K| per head over it.
    const Dataset calib = test::tokens_for(t.opened, 8, 0);
    KvCacheQuantizer& kv = *t.q->kv_caches()[0];
    at::Tensor amax = at::zeros({4});
    t.q->set_enabled(false);
    kv.set_observer([&](const at::Tensor& k, const at::Tensor&) { amax = at::maximum(amax, k.abs().amax({0, 2, 3})); });
    test::logits(*t.opened.model, calib);
    kv.set_observer(nullptr);
    for (int64_t h = 0; h < 4; ++h) EXPECT_EQ(kv.key_amax()[static_cast<size_t>(h)], amax[h].item<float>()) << h;
    // K and V of 2 layers x 4 heads x 16 dims at 8 bits, against 16.
    const KvCacheMemory mem = t.q->kv_cache_memory();
    EXPECT_EQ(mem.layers, 2);
    EXPECT_DOUBLE_EQ(mem.bits_per_token, 2.0 * 2 * 4 * 16 * 8);
    EXPECT_DOUBLE_EQ(mem.fp16_bits_per_token, 2.0 * 2 * 4 * 16 * 16);
    EXPECT_DOUBLE_EQ(mem.bytes_for(8192), 2.0 * 2 * 4 * 16 * 8192);
}

TEST(KvCacheQuantization, QuantizedCacheChangesTheOutputAndIsSwitchable) {
    test::QuantizedTiny t = test::quantize_tiny(w4_recipe(R"("nvfp4")"));
    const Dataset d = test::tokens_for(t.opened, 4, 9);
    const at::Tensor with = test::logits(*t.opened.model, d);
    t.q->set_kv_cache_enabled(false);
    const at::Tensor without = test::logits(*t.opened.model, d);
    EXPECT_FALSE(at::equal(with, without));
    t.q->set_kv_cache_enabled(true);
    EXPECT_TRUE(at::equal(test::logits(*t.opened.model, d), with));
}

TEST(KvCacheQuantization, CheckpointRoundTripIsBitIdentical) {
    test::QuantizedTiny t = test::quantize_tiny(w4_recipe(R"({"format": "int8", "granularity": "head", "exclude": ["*layers.1.*"]})"));
    ASSERT_EQ(t.q->kv_caches().size(), 1u);  // layer 1 excluded
    const Dataset d = test::tokens_for(t.opened, 4, 9);
    const at::Tensor before = test::logits(*t.opened.model, d);
    const std::string dir = test::temp_dir("kv-ckpt") + "/ckpt";
    save_quantized_checkpoint(*t.q, t.opened.path, dir, false);
    OpenedModel back = open_model(dir);
    ASSERT_TRUE(back.quantization);
    ASSERT_EQ(back.quantization->kv_caches().size(), 1u);
    EXPECT_EQ(back.quantization->kv_caches()[0]->key_amax(), t.q->kv_caches()[0]->key_amax());
    EXPECT_TRUE(at::equal(test::logits(*back.model, d), before));
    // A lying checkpoint: the amax tensor removed.
    {
        const std::string tensors = dir + "/quantlab_quant.safetensors";
        const SafetensorsFile f = SafetensorsFile::open(tensors);
        std::vector<std::pair<std::string, at::Tensor>> kept;
        for (const std::string& n : f.names())
            if (n.find("k_amax") == std::string::npos) kept.emplace_back(n, load_float32(f, n, true));
        write_safetensors(tensors + ".new", kept, {{"format", "quantlab-ptq"}});
        std::filesystem::rename(tensors + ".new", tensors);
    }
    try {
        open_model(dir);
        FAIL() << "a checkpoint without its KV amax loaded";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("missing tensor 'model.layers.0.self_attn.k_amax'"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(KvCacheQuantization, TrainingGetsStraightThroughGradients) {
    AttentionSite site = site_of(1, 16);
    KvCacheQuantizer kv(site, kv_cache_preset("nvfp4"), false);
    kv.set_amax({2.0f}, {2.0f});
    kv.set_enabled(true);
    at::Tensor k = at::randn({1, 1, 3, 16}).requires_grad_(true);
    at::Tensor v = at::randn({1, 1, 3, 16}).requires_grad_(true);
    at::Tensor q = at::randn({1, 2, 3, 16});
    at::Tensor kk = k, vv = v;
    site.apply(q, kk, vv);
    EXPECT_FALSE(at::equal(kk.detach(), k.detach()));  // quantized
    (kk.sum() + 2 * vv.sum()).backward();
    EXPECT_TRUE(at::equal(k.grad(), at::ones_like(k)));   // identity gradient (STE)
    EXPECT_TRUE(at::equal(v.grad(), at::full_like(v, 2.0)));
}

TEST(KvCacheQuantization, QkRotationLeavesScoresAndRotatesTheCachedKeys) {
    AttentionSite site = site_of(2, 32);
    KvCacheQuantizer kv(site, kv_cache_preset("nvfp4_rotate"), false);
    EXPECT_TRUE(kv.rotates_qk());
    at::Tensor q = at::randn({1, 4, 5, 32}), k = at::randn({1, 2, 5, 32}), v = at::randn({1, 2, 5, 32});
    const at::Tensor q0 = q.clone(), k0 = k.clone();
    site.apply(q, k, v);  // quantization off: rotation only
    EXPECT_FALSE(at::allclose(k, k0));
    const at::Tensor s0 = at::matmul(q0.narrow(1, 0, 2), k0.transpose(-1, -2));
    const at::Tensor s1 = at::matmul(q.narrow(1, 0, 2), k.transpose(-1, -2));
    EXPECT_TRUE(at::allclose(s0, s1, 1e-5, 1e-5));
}

TEST(KvCacheRecipe, SectionParsesRoundTripsAndRefusesNonsense) {
    const Recipe r = parse_recipe(w4_recipe(R"({"preset": "nvfp4", "exclude": ["*layers.0.*"]})"), "r");
    EXPECT_TRUE(r.kv_cache.enabled);
    EXPECT_EQ(r.kv_cache.format, "nvfp4");
    const Recipe again = parse_recipe(recipe_to_json(r), "again");
    EXPECT_EQ(again.kv_cache.format, "nvfp4");
    EXPECT_EQ(again.kv_cache.exclude, std::vector<std::string>{"*layers.0.*"});
    for (const char* bad : {R"("fp7")", R"({"format": "mxfp4"})", R"({"format": "nvfp4", "granularity": "group"})",
                            R"({"format": "int8", "use_constant_amax": true})", R"({"format": "fp8_e4m3", "group_size": 16})",
                            R"({"format": "fp8_e4m3", "bits": 8})", R"({"granularity": "head"})"}) {
        SCOPED_TRACE(bad);
        EXPECT_THROW(parse_recipe(w4_recipe(bad), "bad"), UserError);
    }
    Recipe o = load_recipe("NVFP4_DEFAULT");
    overlay_recipe(o, "fp8_cast", "");
    EXPECT_TRUE(o.kv_cache.use_constant_amax);
    EXPECT_EQ(o.name, "NVFP4_DEFAULT-kv_fp8_cast");
    EXPECT_THROW(overlay_recipe(o, "fp9", ""), UserError);
    overlay_recipe(o, "none", "");
    EXPECT_FALSE(o.kv_cache.enabled);
}

TEST(KvCacheRecipe, EncodersAndUnmatchedExcludesAreRefused) {
    OpenedModel m = open_model(test::tiny_llama());
    // An exclude glob that names no attention (they are model.layers.N.self_attn).
    EXPECT_THROW({ QuantizedModel q(*m.model, parse_recipe(w4_recipe(R"({"format": "fp8_e4m3", "exclude": ["*mlp*"]})"), "r")); },
                 UserError);
    EXPECT_NO_THROW({ QuantizedModel q(*m.model, parse_recipe(w4_recipe(R"({"format": "fp8_e4m3", "exclude": ["*attn*"]})"), "r")); });
    // A BERT encoder keeps no KV cache.
    ModelConfig bert;
    bert.architecture = bert.model_type = "bert";
    bert.vocab_size = 30;
    bert.hidden_size = 32;
    bert.num_layers = 1;
    bert.num_heads = 2;
    bert.num_kv_heads = 2;
    bert.head_dim = 16;
    bert.intermediate_size = 64;
    bert.max_positions = 16;
    bert.type_vocab_size = 2;
    bert.activation = "gelu";
    auto encoder = create_model(bert, 1);
    EXPECT_TRUE(encoder->attention_sites().empty());
    try {
        QuantizedModel q(*encoder, parse_recipe(w4_recipe(R"("fp8")"), "r"));
        FAIL() << "a KV cache on an encoder";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("r: kv_cache: bert keeps no KV cache"), std::string::npos) << e.what();
    }
}

TEST(KvCacheExport, HfModeloptWritesKScaleAndVScale) {
    test::QuantizedTiny t = test::quantize_tiny(w4_recipe(R"("nvfp4")"));
    const std::string dir = test::temp_dir("kv-export") + "/hf";
    NullJobSink sink;
    CancellationToken cancel;
    export_hf_modelopt(*t.q, t.opened.path, dir, false, sink, cancel);
    const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(dir);
    for (int layer = 0; layer < 2; ++layer) {
        const std::string base = "model.layers." + std::to_string(layer) + ".self_attn.";
        const KvCacheQuantizer& kv = *t.q->kv_caches()[static_cast<size_t>(layer)];
        const at::Tensor ks = load_float32(c, base + "k_proj.k_scale"), vs = load_float32(c, base + "v_proj.v_scale");
        EXPECT_EQ(ks.dim(), 0);
        EXPECT_EQ(ks.item<float>(), kv.key_amax()[0] / 448.0f);
        EXPECT_EQ(vs.item<float>(), kv.value_amax()[0] / 448.0f);
    }
    std::ifstream qc(dir + "/hf_quant_config.json"), cfg(dir + "/config.json");
    const auto q = nlohmann::json::parse(qc), config = nlohmann::json::parse(cfg);
    EXPECT_EQ(q["quantization"]["kv_cache_quant_algo"], "NVFP4");
    EXPECT_EQ(config["quantization_config"]["kv_cache_scheme"], "NVFP4");
    // QuantLab reads the export back with its KV cache and the same k_scale / v_scale. NVFP4's
    // global scale is amax / (6 * 448) while the file keeps amax / 448: where two amax values share
    // one k_scale, the global scale read back may differ in its last bit (Model Optimizer's file
    // has the same ambiguity), so the outputs agree to float rounding, not bit for bit.
    OpenedModel back = open_model(dir);
    ASSERT_TRUE(back.quantization);
    ASSERT_EQ(back.quantization->kv_caches().size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(back.quantization->kv_caches()[i]->key_scale(), t.q->kv_caches()[i]->key_scale());
        EXPECT_EQ(back.quantization->kv_caches()[i]->value_scale(), t.q->kv_caches()[i]->value_scale());
    }
    const Dataset d = test::tokens_for(t.opened, 4, 9);
    EXPECT_TRUE(at::allclose(test::logits(*back.model, d), test::logits(*t.opened.model, d), 1e-5, 1e-6));
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(KvCacheExport, PerHeadScalesRoundTripThroughHfModelopt) {
    test::QuantizedTiny t = test::quantize_tiny(
        R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "fp8_e4m3"}},
            {"quantizer_name": "*input_quantizer", "cfg": {"format": "fp8_e4m3"}},
            {"quantizer_name": "*lm_head*", "enable": false}], "kv_cache": "fp8_head"})");
    const std::string dir = test::temp_dir("kv-export-heads") + "/hf";
    NullJobSink sink;
    CancellationToken cancel;
    export_hf_modelopt(*t.q, t.opened.path, dir, false, sink, cancel);
    const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(dir);
    EXPECT_EQ(c.info("model.layers.1.self_attn.v_proj.v_scale").shape, (std::vector<int64_t>{4}));
    OpenedModel back = open_model(dir);
    ASSERT_TRUE(back.quantization);
    EXPECT_EQ(back.quantization->kv_caches()[1]->settings().granularity, "head");
    // FP8 caches use scale = amax / 448 itself: the same scales give the same outputs bit for bit.
    EXPECT_EQ(back.quantization->kv_caches()[1]->value_scale(), t.q->kv_caches()[1]->value_scale());
    const Dataset d = test::tokens_for(t.opened, 4, 9);
    EXPECT_TRUE(at::equal(test::logits(*back.model, d), test::logits(*t.opened.model, d)));
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(KvCacheExport, HfModeloptRefusesOnlineRotationsAndDynamicGroups) {
    NullJobSink sink;
    CancellationToken cancel;
    test::QuantizedTiny rotated = test::quantize_tiny(
        R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "nvfp4"}},
            {"quantizer_name": "*lm_head*", "enable": false}], "rotation": "rht"})");
    try {
        export_hf_modelopt(*rotated.q, rotated.opened.path, test::temp_dir("kv-refuse") + "/a", false, sink, cancel);
        FAIL() << "an online rotation was exported";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("online Hadamard rotation"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("--as fakequant"), std::string::npos) << e.what();
    }
    test::QuantizedTiny groups = test::quantize_tiny(w4_recipe(R"("int4")"));
    EXPECT_THROW(export_hf_modelopt(*groups.q, groups.opened.path, test::temp_dir("kv-refuse") + "/b", false, sink, cancel),
                 UserError);
}

}  // namespace
}  // namespace ql
