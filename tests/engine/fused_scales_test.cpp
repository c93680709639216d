// SPDX-License-Identifier: GPL-3.0-or-later
// Fused layers sharing their per-tensor scales (recipe "share_fused_scales"; engine/quant/
// fused_layers.h, shared_weight_amax.h): which layers are fused, one NVFP4 global scale and one
// static input amax per group after PTQ, the shared amax following every QAT/QAD step, and the
// exports writing one scale per group.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "engine/data/dataset.h"
#include "engine/loading/model_source.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/fused_layers.h"
#include "engine/quant/recipe.h"
#include "engine/train/quant_trainer.h"
#include "engine/train/training_batches.h"
#include "export_test_support.h"
#include "user_error_text.h"

namespace ql {
namespace {

using test::quantize_tiny;
using test::recipe;

std::string with_shared_fused_scales(const std::string& r) { return r.substr(0, r.size() - 1) + R"(, "share_fused_scales": true})"; }

float amax_of(const at::Tensor& w) { return w.abs().max().item<float>(); }

TEST(FusedLayers, QkvAndGateUpOfEachBlockAndBertsQueryKeyValue) {
    const auto g = fused_layer_groups(std::vector<std::string>{
        "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.v_proj",
        "model.layers.0.self_attn.o_proj", "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj",
        "model.layers.0.mlp.down_proj", "encoder.layer.3.attention.self.value", "encoder.layer.3.attention.self.query",
        "encoder.layer.3.attention.self.key", "lm_head", "model.layers.1.self_attn.k_proj"});
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(g[0], (std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
                                              "model.layers.0.self_attn.v_proj"}));
    EXPECT_EQ(g[1], (std::vector<std::string>{"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}));
    EXPECT_EQ(g[2], (std::vector<std::string>{"encoder.layer.3.attention.self.query", "encoder.layer.3.attention.self.key",
                                              "encoder.layer.3.attention.self.value"}));
}

TEST(FusedScales, PtqGivesEachFusedGroupOneGlobalScaleAndOneInputAmax) {
    test::QuantizedTiny on = quantize_tiny(with_shared_fused_scales(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})")));
    test::QuantizedTiny off = quantize_tiny(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"));
    const std::string p = "model.layers.0.self_attn.";
    float group_amax = 0;
    for (const char* n : {"q_proj", "k_proj", "v_proj"}) group_amax = std::max(group_amax, amax_of(on.q->find(p + n)->layer().weight));
    for (const char* n : {"q_proj", "k_proj", "v_proj"}) {
        LayerQuantizer& l = *on.q->find(p + n);
        EXPECT_EQ(l.weight_spec().fixed_amax, group_amax) << n;
        EXPECT_EQ(*l.encode_weight().global_scale, group_amax / (6.0f * 448.0f)) << n;
        EXPECT_EQ(l.input_amax(), on.q->find(p + "q_proj")->input_amax()) << n;
        // Without sharing each layer uses its own amax.
        EXPECT_TRUE(std::isnan(off.q->find(p + n)->weight_spec().fixed_amax)) << n;
    }
    EXPECT_TRUE(std::isnan(on.q->find(p + "o_proj")->weight_spec().fixed_amax));
    EXPECT_EQ(on.q->shared_weight_groups().size(), 4u);
    // The layer whose amax is not the group's quantizes differently from its own-amax version.
    int differ = 0;
    for (const char* n : {"q_proj", "k_proj", "v_proj"})
        differ += !at::equal(on.q->find(p + n)->quantized_weight(), off.q->find(p + n)->quantized_weight());
    EXPECT_GE(differ, 2);
}

TEST(FusedScales, PerChannelAndGroupFormatsHaveNoScaleToShare) {
    test::QuantizedTiny m = quantize_tiny(with_shared_fused_scales(recipe("max", R"({"format": "int4", "granularity": "group", "group_size": 32})")));
    EXPECT_TRUE(m.q->shared_weight_groups().empty());
    EXPECT_TRUE(std::isnan(m.q->find("model.layers.0.self_attn.q_proj")->weight_spec().fixed_amax));
    // FP8 per tensor shares its weight scale.
    test::QuantizedTiny f = quantize_tiny(with_shared_fused_scales(recipe("max", R"({"format": "fp8_e4m3"})", R"({"format": "fp8_e4m3"})")));
    EXPECT_EQ(f.q->shared_weight_groups().size(), 4u);
    EXPECT_EQ(f.q->find("model.layers.1.mlp.gate_proj")->encode_weight().scales.as<float>()[0],
              f.q->find("model.layers.1.mlp.up_proj")->encode_weight().scales.as<float>()[0]);
}

TEST(FusedScales, TheSharedAmaxFollowsASiblingsWeightChange) {
    test::QuantizedTiny m = quantize_tiny(with_shared_fused_scales(recipe("max", R"({"format": "nvfp4"})")));
    const std::string p = "model.layers.0.self_attn.";
    LayerQuantizer& q = *m.q->find(p + "q_proj");
    LayerQuantizer& k = *m.q->find(p + "k_proj");
    const at::Tensor before = q.quantized_weight().clone();
    {
        at::NoGradGuard g;
        k.layer().weight.mul_(3.0f);  // an optimiser step on k only
    }
    float group_amax = 0;
    for (const char* n : {"q_proj", "k_proj", "v_proj"}) group_amax = std::max(group_amax, amax_of(m.q->find(p + n)->layer().weight));
    EXPECT_EQ(q.weight_spec().fixed_amax, group_amax);
    EXPECT_FALSE(at::equal(q.quantized_weight(), before));  // q's cache followed although q's weight did not change
}

TEST(FusedScales, QadStepsKeepTheGroupsGlobalScaleShared) {
    test::QuantizedTiny s;  // the NVFP4_DEFAULT preset shares fused scales
    s.opened = open_model(test::tiny_llama(), WeightStorage::Float32Copy);  // trained: owned float32 weights
    s.q = std::make_unique<QuantizedModel>(*s.opened.model, load_recipe("NVFP4_DEFAULT"));
    {
        NullJobSink quiet;
        CancellationToken c;
        run_ptq_pipeline(*s.q, test::tokens_for(s.opened, 8, 0), PtqOptions{}, quiet, c);
    }
    ASSERT_TRUE(s.q->recipe().share_fused_scales);
    OpenedModel teacher = open_model(test::tiny_llama());
    const std::string p = "model.layers.1.mlp.";
    const float g0 = *s.q->find(p + "gate_proj")->encode_weight().global_scale;
    const TrainingBatches data("synthetic:random-tokens", s.opened.data, 16, 0);
    QuantTrainingConfig c;
    c.mode = "qad";
    c.steps = 5;
    c.schedule.peak = 3e-2;
    c.schedule.decay = LrSchedule::Decay::Constant;
    c.config_json = "{}";
    NullJobSink sink;
    CancellationToken cancel;
    train_quantized(*s.q, teacher.model.get(), data, c, nullptr, sink, cancel);
    const float gg = *s.q->find(p + "gate_proj")->encode_weight().global_scale;
    const float gu = *s.q->find(p + "up_proj")->encode_weight().global_scale;
    EXPECT_EQ(gg, gu);
    EXPECT_NE(gg, g0);  // the weights moved, the shared scale with them
    const float amax = std::max(amax_of(s.q->find(p + "gate_proj")->layer().weight), amax_of(s.q->find(p + "up_proj")->layer().weight));
    EXPECT_EQ(gg, amax / (6.0f * 448.0f));
}

TEST(FusedScales, RecipeOptionRoundTripsAndIsOnInTheNvfp4AndFp8Presets) {
    for (const char* name : {"NVFP4_DEFAULT", "NVFP4_MLP_ONLY", "FP8_DEFAULT"}) EXPECT_TRUE(load_recipe(name).share_fused_scales) << name;
    EXPECT_FALSE(load_recipe("INT4_AWQ").share_fused_scales);
    const Recipe r = parse_recipe(with_shared_fused_scales(recipe("max", R"({"format": "nvfp4"})")), "t");
    EXPECT_TRUE(parse_recipe(recipe_to_json(r), "again").share_fused_scales);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"quant_cfg": [], "share_fused_scales": 1})", "r.json"); })
                  .find("r.json: share_fused_scales: expected true or false"),
              std::string::npos);
}

}  // namespace
}  // namespace ql
