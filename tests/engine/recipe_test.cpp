// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <utility>

#include "engine/core/errors.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/recipe.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

std::unique_ptr<Model> tiny_llama() {
    return load_hf_model(std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama");
}

TEST(GlobMatch, StarsCrossDotsAndQuestionMarksMatchOneCharacter) {
    EXPECT_TRUE(glob_match("*weight_quantizer", "model.layers.0.mlp.up_proj.weight_quantizer"));
    EXPECT_TRUE(glob_match("*mlp*input_quantizer", "model.layers.0.mlp.up_proj.input_quantizer"));
    EXPECT_FALSE(glob_match("*mlp*input_quantizer", "model.layers.0.self_attn.q_proj.input_quantizer"));
    EXPECT_TRUE(glob_match("*lm_head*", "lm_head.weight_quantizer"));
    EXPECT_TRUE(glob_match("output.*", "output.weight_quantizer"));
    EXPECT_FALSE(glob_match("output.*", "encoder.layer.0.output.dense.weight_quantizer"));
    EXPECT_TRUE(glob_match("model.layers.?.mlp*", "model.layers.3.mlp.down_proj.input_quantizer"));
    EXPECT_FALSE(glob_match("model.layers.?.mlp*", "model.layers.13.mlp.down_proj.input_quantizer"));
    EXPECT_TRUE(glob_match("*", ""));
    EXPECT_FALSE(glob_match("a", ""));
}

TEST(RecipePresets, EveryPresetParsesAndRoundTripsThroughJson) {
    const std::vector<std::string> names = preset_names();
    for (const char* want : {"FP8_DEFAULT", "NVFP4_DEFAULT", "NVFP4_MLP_ONLY", "MXFP4", "MXFP8", "INT8_SMOOTHQUANT",
                             "INT4_AWQ", "W4A16_GPTQ", "NF4"})
        EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    for (const std::string& n : names) {
        const Recipe r = load_recipe(n);
        EXPECT_EQ(r.name, n);
        const Recipe again = parse_recipe(recipe_to_json(r), "round trip");
        EXPECT_EQ(recipe_to_json(again), recipe_to_json(r)) << n;
    }
    // Model Optimizer's names with _CFG, any case.
    EXPECT_EQ(load_recipe("nvfp4_default_cfg").name, "NVFP4_DEFAULT");
}

TEST(RecipePresets, Nvfp4DefaultQuantizesEveryLinearButLmHead) {
    const Recipe r = load_recipe("NVFP4_DEFAULT");
    const QuantizerSettings w = settings_for(r, "model.layers.0.self_attn.q_proj.weight_quantizer");
    EXPECT_TRUE(w.enabled);
    EXPECT_EQ(w.options.format, "nvfp4");
    const QuantizerSettings x = settings_for(r, "model.layers.1.mlp.down_proj.input_quantizer");
    EXPECT_TRUE(x.enabled);
    EXPECT_FALSE(x.dynamic);  // calibrated global scale, dynamic block scales
    EXPECT_EQ(x.calibrator, "max");
    EXPECT_FALSE(settings_for(r, "lm_head.weight_quantizer").enabled);
    EXPECT_FALSE(settings_for(r, "lm_head.input_quantizer").enabled);
    EXPECT_EQ(r.algorithm.method, "max");
}

TEST(RecipePresets, AlgorithmsAndGranularitiesFollowTheirNames) {
    const Recipe awq = load_recipe("INT4_AWQ");
    EXPECT_EQ(awq.algorithm.method, "awq");
    EXPECT_EQ(awq.algorithm.awq_grid, 10);
    const QuantizerSettings w = settings_for(awq, "model.layers.0.mlp.up_proj.weight_quantizer");
    EXPECT_EQ(w.options.format, "int4");
    EXPECT_EQ(w.options.granularity, "group");
    EXPECT_EQ(w.options.group_size, 128);
    EXPECT_FALSE(settings_for(awq, "model.layers.0.mlp.up_proj.input_quantizer").enabled);
    const Recipe sq = load_recipe("INT8_SMOOTHQUANT");
    EXPECT_EQ(sq.algorithm.method, "smoothquant");
    EXPECT_DOUBLE_EQ(sq.algorithm.smoothquant_alpha, 1.0);
    EXPECT_EQ(settings_for(sq, "x.weight_quantizer").options.granularity, "channel");
    EXPECT_EQ(load_recipe("W4A16_GPTQ").algorithm.method, "gptq");
    EXPECT_EQ(settings_for(load_recipe("NF4"), "a.weight_quantizer").options.format, "nf4");
    const Recipe mlp = load_recipe("NVFP4_MLP_ONLY");
    EXPECT_TRUE(settings_for(mlp, "model.layers.0.mlp.gate_proj.weight_quantizer").enabled);
    EXPECT_FALSE(settings_for(mlp, "model.layers.0.self_attn.q_proj.weight_quantizer").enabled);
}

TEST(RecipeParsing, LaterEntriesOverrideEarlierOnesFieldByField) {
    const Recipe r = parse_recipe(R"({"quant_cfg": [
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
        {"quantizer_name": "*down_proj.weight_quantizer", "cfg": {"format": "int8", "granularity": "channel"}},
        {"quantizer_name": "*layers.1.*", "enable": false}]})",
                                  "mixed.json");
    EXPECT_EQ(r.name, "mixed");
    const QuantizerSettings up = settings_for(r, "model.layers.0.mlp.up_proj.weight_quantizer");
    EXPECT_EQ(up.options.format, "int4");
    const QuantizerSettings down = settings_for(r, "model.layers.0.mlp.down_proj.weight_quantizer");
    EXPECT_EQ(down.options.format, "int8");
    EXPECT_EQ(down.options.granularity, "channel");
    EXPECT_EQ(down.options.group_size, 32);  // kept from the first entry
    EXPECT_FALSE(settings_for(r, "model.layers.1.mlp.up_proj.weight_quantizer").enabled);
}

TEST(RecipeParsing, MalformedRecipesNameTheFileAndField) {
    EXPECT_NE(test::user_error_text([] { parse_recipe("{", "r.json"); }).find("r.json: not valid JSON"), std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"quant_cfg": [], "colour": 1})", "r.json"); }).find("r.json: recipe.colour: unknown key"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*", "cfg": {"format": "fp5"}}]})", "r.json"); })
                  .find("r.json: quant_cfg[0].cfg.format: unknown format"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*", "cfg": {"group_size": -4}}]})", "r.json"); })
                  .find("quant_cfg[0].cfg.group_size"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"quant_cfg": [{"cfg": {}}]})", "r.json"); }).find("quant_cfg[0].quantizer_name: missing"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"algorithm": "gptq2", "quant_cfg": []})", "r.json"); }).find("algorithm.method"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"algorithm": {"method": "awq", "alpha": 0.5}, "quant_cfg": []})", "r.json"); })
                  .find("algorithm.alpha: applies to smoothquant only"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*", "cfg": {"calibrator": "kl"}}]})", "r.json"); })
                  .find("cfg.calibrator"),
              std::string::npos);
    EXPECT_NE(test::user_error_text([] { parse_recipe(R"({"algorithm": "max"})", "r.json"); }).find("quant_cfg: missing"), std::string::npos);
    EXPECT_NE(test::user_error_text([] { load_recipe("NOT_A_PRESET"); }).find("neither a preset"), std::string::npos);
}

TEST(RecipePlan, BadRecipesFailBeforeAnyWorkNamingTheLayer) {
    const auto model = tiny_llama();
    // A pattern that matches nothing.
    const std::string none = test::user_error_text([&] {
        plan_recipe(parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*mlp.fc9*", "cfg": {"format": "int8"}}]})", "r.json"), *model);
    });
    EXPECT_NE(none.find("r.json: quant_cfg[0].quantizer_name '*mlp.fc9*' matches no quantizer"), std::string::npos) << none;
    // Disable-only entries may match nothing (Model Optimizer's default lists do).
    EXPECT_NO_THROW(plan_recipe(parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*router*", "enable": false}]})", "r.json"), *model));
    // A group longer than the input dimension (64 and 96 here).
    const std::string group = test::user_error_text([&] { plan_recipe(load_recipe("W4A16_GPTQ"), *model); });
    EXPECT_NE(group.find("layer model.layers.0.self_attn.q_proj weight quantizer: group size 128 is longer than the last dimension (64)"),
              std::string::npos)
        << group;
    // A format whose blocks do not apply to a setting.
    const std::string gran = test::user_error_text([&] {
        plan_recipe(parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*", "cfg": {"format": "nvfp4", "granularity": "channel"}}]})", "r.json"),
                    *model);
    });
    EXPECT_NE(gran.find("nvfp4 has fixed blocks"), std::string::npos) << gran;
    // Per-channel activation scales are not offered.
    const std::string act = test::user_error_text([&] {
        plan_recipe(parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*input_quantizer", "cfg": {"format": "int8", "granularity": "channel"}}]})",
                                 "r.json"),
                    *model);
    });
    EXPECT_NE(act.find("per-channel activation scales"), std::string::npos) << act;
}

TEST(RecipePlan, PlansEveryLinearInForwardOrder) {
    const auto model = tiny_llama();
    const std::vector<LayerQuantPlan> plans = plan_recipe(load_recipe("FP8_DEFAULT"), *model);
    ASSERT_EQ(plans.size(), 2u * 7u + 1u);  // q k v o gate up down per layer, lm_head
    EXPECT_EQ(plans.front().layer->name, "model.layers.0.self_attn.q_proj");
    EXPECT_EQ(plans.back().layer->name, "lm_head");
    EXPECT_FALSE(plans.back().weight.enabled);
    EXPECT_EQ(plans.front().weight_spec.info->name, "fp8_e4m3");
    EXPECT_EQ(plans.front().input_spec.info->name, "fp8_e4m3");
}

// Rows the GGUF K-quants' super-blocks of 256 do not tile (the tiny Llama's 64 and 96 inputs;
// SmolLM2's 576) take the type llama-quantize writes for them, and the plan says so.
TEST(RecipePlan, GgufBlockTypesThatDoNotFitTheRowsTakeLlamaCppsFallback) {
    const auto model = tiny_llama();
    for (const auto& [preset, fallback] : {std::pair<const char*, const char*>{"GGUF_Q4_K", "gguf_q5_0"}, {"GGUF_Q6_K", "gguf_q8_0"}}) {
        SCOPED_TRACE(preset);
        const std::vector<LayerQuantPlan> plans = plan_recipe(load_recipe(preset), *model);
        int quantized = 0;
        for (const LayerQuantPlan& p : plans) {
            if (!p.weight.enabled) {
                EXPECT_TRUE(p.weight_fallback.empty()) << p.layer->name;
                continue;
            }
            ++quantized;
            EXPECT_EQ(p.weight_spec.info->name, fallback) << p.layer->name;
            EXPECT_EQ(p.weight.options.format, fallback) << p.layer->name;
            const std::string cols = std::to_string(p.layer->weight.size(1));
            std::string from = preset;
            for (char& c : from) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            EXPECT_EQ(p.weight_fallback, "llama.cpp's fallback for " + from + ": rows of " + cols + " are not a multiple of 256");
        }
        EXPECT_EQ(quantized, 14);  // every Linear but lm_head
    }
    // A type whose block fits keeps its format and says nothing.
    for (const LayerQuantPlan& p :
         plan_recipe(parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*mlp*weight_quantizer", "cfg": {"format": "gguf_q4_0"}}]})", "r.json"), *model)) {
        EXPECT_TRUE(p.weight_fallback.empty()) << p.weight_fallback;
        if (p.weight.enabled) EXPECT_EQ(p.weight_spec.info->name, "gguf_q4_0");
    }
}

// Groups that leave a short last group plan (Model Optimizer pads that group); the group size stays.
TEST(RecipePlan, GroupsWithAShortLastGroupArePlanned) {
    const auto model = tiny_llama();
    const std::vector<LayerQuantPlan> plans = plan_recipe(
        parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 48}}]})",
                     "r.json"),
        *model);
    ASSERT_FALSE(plans.empty());
    EXPECT_EQ(plans.front().weight_spec.block, 48);  // 64 inputs: a group of 48 and one of 16
    EXPECT_EQ(plans.front().weight_spec.granularity, Granularity::Group);
}

}  // namespace
}  // namespace ql
