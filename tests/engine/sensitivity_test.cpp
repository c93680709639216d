// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <c10/core/InferenceMode.h>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/ptq/sensitivity.h"

namespace ql {
namespace {

// A token model's layer: its search cost is its KL (measure_sensitivity sets cost = kl; the
// search minimises `cost` since sentence encoders, whose cost is the cosine loss, arrived).
LayerSensitivity layer(const std::string& name, double kl, double bits, int64_t params) {
    LayerSensitivity l;
    l.layer = name;
    l.kl = l.cost = kl;
    l.weight_bits = bits * static_cast<double>(params);
    l.parameters = params;
    return l;
}

TEST(MixedPrecision, SpendsTheBudgetWhereItBuysTheMostKl) {
    const Recipe four = load_recipe("NVFP4_DEFAULT"), eight = load_recipe("FP8_DEFAULT");
    // Three layers of 100 weights; the second is very sensitive at 4 bits.
    const std::vector<MixedPrecisionCandidate> c = {
        {"NVFP4_DEFAULT", &four, {layer("a", 0.01, 4.5, 100), layer("b", 1.0, 4.5, 100), layer("c", 0.02, 4.5, 100)}},
        {"FP8_DEFAULT", &eight, {layer("a", 0.001, 8.32, 100), layer("b", 0.002, 8.32, 100), layer("c", 0.001, 8.32, 100)}}};
    const MixedPrecisionChoice six = choose_mixed_precision(c, 6.0);
    ASSERT_EQ(six.chosen.size(), 3u);
    EXPECT_EQ(six.chosen[0].second, "NVFP4_DEFAULT");
    EXPECT_EQ(six.chosen[1].second, "FP8_DEFAULT");
    EXPECT_EQ(six.chosen[2].second, "NVFP4_DEFAULT");
    EXPECT_NEAR(six.bits_per_weight, (4.5 + 8.32 + 4.5) / 3, 1e-12);
    EXPECT_NEAR(six.predicted_kl, 0.01 + 0.002 + 0.02, 1e-12);
    // The recipe quantizes exactly those layers that way.
    EXPECT_EQ(settings_for(six.recipe, "b.weight_quantizer").options.format, "fp8_e4m3");
    EXPECT_EQ(settings_for(six.recipe, "a.input_quantizer").options.format, "nvfp4");
    EXPECT_FALSE(settings_for(six.recipe, "other.weight_quantizer").enabled);
    // A generous budget leaves the most sensitive layers unquantized (KL 0 at 16 bits).
    const MixedPrecisionChoice wide = choose_mixed_precision(c, 16.0);
    for (const auto& [name, pick] : wide.chosen) EXPECT_EQ(pick, "none") << name;
    // The tightest budget: everything 4-bit.
    const MixedPrecisionChoice tight = choose_mixed_precision(c, 4.5);
    for (const auto& [name, pick] : tight.chosen) EXPECT_EQ(pick, "NVFP4_DEFAULT") << name;
    EXPECT_THROW(choose_mixed_precision(c, 4.0), UserError);
}

TEST(MixedPrecision, FusedLayersAreOneDecision) {
    const Recipe four = load_recipe("NVFP4_DEFAULT"), eight = load_recipe("FP8_DEFAULT");
    ASSERT_TRUE(four.share_fused_scales);
    // q/k/v of one attention (vLLM fuses them into qkv_proj) and a down_proj, 100 weights each;
    // q_proj is the most sensitive at 4 bits, then down_proj.
    auto candidates = [&](const std::string& q, const std::string& k, const std::string& v, const std::string& d) {
        return std::vector<MixedPrecisionCandidate>{
            {"NVFP4_DEFAULT", &four, {layer(q, 1.0, 4.5, 100), layer(k, 0.01, 4.5, 100), layer(v, 0.01, 4.5, 100), layer(d, 0.6, 4.5, 100)}},
            {"FP8_DEFAULT", &eight, {layer(q, 0.001, 8.32, 100), layer(k, 0.001, 8.32, 100), layer(v, 0.001, 8.32, 100), layer(d, 0.001, 8.32, 100)}}};
    };
    const std::string a = "model.layers.0.self_attn.", d = "model.layers.0.mlp.down_proj";
    const auto fused = candidates(a + "q_proj", a + "k_proj", a + "v_proj", d);
    // 5.5 bits (2200 of 400 weights): were the layers independent, q_proj alone would go FP8
    // (832 + 3 x 450 = 2182 bits), as it does for layers that nobody fuses:
    const MixedPrecisionChoice apart = choose_mixed_precision(candidates("q", "k", "v", "down"), 5.5);
    ASSERT_EQ(apart.chosen.size(), 4u);
    EXPECT_EQ(apart.chosen[0].second, "FP8_DEFAULT");
    EXPECT_EQ(apart.chosen[1].second, "NVFP4_DEFAULT");
    EXPECT_EQ(apart.chosen[2].second, "NVFP4_DEFAULT");
    EXPECT_EQ(apart.chosen[3].second, "NVFP4_DEFAULT");
    // ... but q/k/v take one format: all three in FP8 (3 x 832 + 450 = 2946 bits) does not fit,
    // so the group stays NVFP4 and the budget buys down_proj FP8 (3 x 450 + 832 = 2182 bits).
    const MixedPrecisionChoice tight = choose_mixed_precision(fused, 5.5);
    ASSERT_EQ(tight.chosen.size(), 4u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(tight.chosen[i].second, "NVFP4_DEFAULT") << tight.chosen[i].first;
    EXPECT_EQ(tight.chosen[3].second, "FP8_DEFAULT");
    EXPECT_NEAR(tight.bits_per_weight, (3 * 4.5 + 8.32) / 4, 1e-12);
    EXPECT_NEAR(tight.predicted_kl, 1.0 + 0.01 + 0.01 + 0.001, 1e-12);
    EXPECT_TRUE(tight.recipe.share_fused_scales);
    EXPECT_EQ(settings_for(tight.recipe, a + "k_proj.weight_quantizer").options.format, "nvfp4");
    EXPECT_EQ(settings_for(tight.recipe, d + ".weight_quantizer").options.format, "fp8_e4m3");
    // 8.4 bits: the group moves to FP8 together with down_proj; BF16 for any of them does not fit.
    const MixedPrecisionChoice wider = choose_mixed_precision(fused, 8.4);
    for (const auto& [name, pick] : wider.chosen) EXPECT_EQ(pick, "FP8_DEFAULT") << name;
    EXPECT_NEAR(wider.predicted_kl, 4 * 0.001, 1e-12);
    EXPECT_EQ(settings_for(wider.recipe, a + "v_proj.weight_quantizer").options.format, "fp8_e4m3");
}

TEST(Sensitivity, OneLayerAtATimeAgainstTheFpModel) {
    OpenedModel m = open_model(std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama");
    QuantizedModel q(*m.model, load_recipe("NVFP4_DEFAULT"));
    DataOptions o;
    o.split = DataSplit::Train;
    o.samples = 16;
    o.sequence_length = 32;
    const Dataset calib = load_dataset("synthetic:random-tokens", o, m.data);
    o.split = DataSplit::Validation;
    const Dataset eval = load_dataset("synthetic:random-tokens", o, m.data);
    NullJobSink sink;
    CancellationToken cancel;
    run_ptq_pipeline(q, calib, PtqOptions{}, sink, cancel);
    q.find("lm_head");  // excluded by the preset
    q.find("model.layers.0.mlp.up_proj")->set_input_enabled(false);  // a switch the measurement must restore
    const SensitivityResult r = measure_sensitivity(q, eval, 8, sink, cancel);
    ASSERT_EQ(r.layers.size(), 14u);
    double sum = 0;
    int sensitive = 0;
    for (const auto& l : r.layers) {
        // q/k of a random model barely move its near-uniform attention: KL ~ 0 there.
        EXPECT_GE(l.kl, -1e-12) << l.layer;
        sensitive += l.kl > 1e-6;
        EXPECT_NEAR(l.weight_bits, 4.5 * l.parameters + 32, 1e-6) << l.layer;
        sum += l.kl;
    }
    EXPECT_GE(sensitive, 8);
    EXPECT_GT(r.all_quantized_kl, 0);
    // Per-layer KLs add up to the same order as the whole model's (they interact only weakly).
    EXPECT_GT(r.all_quantized_kl, 0.3 * sum);
    EXPECT_LT(r.all_quantized_kl, 3.0 * sum);
    EXPECT_FALSE(q.find("model.layers.0.mlp.up_proj")->input_enabled());
    EXPECT_TRUE(q.find("model.layers.0.mlp.up_proj")->weight_enabled());
}

}  // namespace
}  // namespace ql
