// SPDX-License-Identifier: GPL-3.0-or-later
// export_plan's Model Optimizer config and llama-quantize argument list for a mixed per-layer plan
// on the golden tiny Llama: every layer's entry / tensor type is the plan's, checked against the
// plan as QuantizedModel resolves it (not against the exporter's own tables), and llama.cpp's
// matching (std::regex_search, first match wins) run over every GGUF tensor of the model, plus
// QuantLab's port of llama-quantize's type choice (gguf_type_mix.h, checked against llama.cpp by
// scripts/check-gguf-mixes) fed with the exported overrides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/api/export_api.h"
#include "engine/core/errors.h"
#include "engine/export/gguf_names.h"
#include "engine/export/gguf_type_mix.h"
#include "engine/export/llama_tensor_types.h"
#include "tests/engine/export_test_support.h"

namespace ql {
namespace {

using nlohmann::json;

// NVFP4 W4A4 MLP, FP8 W8A8 attention, MXFP4 W4A4 down projections, INT8 per-channel weight-only
// v_proj in layer 1, INT4 group 32 o_proj in layer 1, o_proj of layer 0 and lm_head in BF16.
const char* kModeloptPlan = R"({"algorithm": "max", "quant_cfg": [
    {"quantizer_name": "*", "enable": false},
    {"quantizer_name": "*mlp*weight_quantizer", "cfg": {"format": "nvfp4"}},
    {"quantizer_name": "*mlp*input_quantizer", "cfg": {"format": "nvfp4"}},
    {"quantizer_name": "*down_proj*weight_quantizer", "cfg": {"format": "mxfp4"}},
    {"quantizer_name": "*down_proj*input_quantizer", "cfg": {"format": "mxfp4"}},
    {"quantizer_name": "*self_attn*weight_quantizer", "cfg": {"format": "fp8_e4m3"}},
    {"quantizer_name": "*self_attn*input_quantizer", "cfg": {"format": "fp8_e4m3"}},
    {"quantizer_name": "*layers.1.self_attn.v_proj.weight_quantizer", "cfg": {"format": "int8", "granularity": "channel", "axis": 0}},
    {"quantizer_name": "*layers.1.self_attn.v_proj.input_quantizer", "enable": false},
    {"quantizer_name": "*o_proj*", "enable": false},
    {"quantizer_name": "*layers.1.self_attn.o_proj.weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
    {"quantizer_name": "*lm_head*", "enable": false}]})";

const json* entry_named(const json& quant_cfg, const std::string& name) {
    const json* found = nullptr;
    for (const json& e : quant_cfg)
        if (e["quantizer_name"] == name) found = &e;  // the last one wins, as in Model Optimizer
    return found;
}

TEST(PlanExport, ModeloptConfigHasEveryLayersQuantizerAsThePlanResolvesIt) {
    const PlanExport p = export_plan(test::tiny_llama(), kModeloptPlan, "modelopt");
    const json cfg = json::parse(p.text);
    EXPECT_EQ(cfg["algorithm"], "max");
    const json& qc = cfg["quant_cfg"];
    EXPECT_EQ(qc[0], json({{"quantizer_name", "*"}, {"enable", false}}));
    const json nvfp4 = {{"num_bits", {2, 1}}, {"effective_bits", 4.5},
                        {"block_sizes", {{"-1", 16}, {"type", "dynamic"}, {"scale_bits", {4, 3}}}}};
    const json mxfp4 = {{"num_bits", {2, 1}}, {"block_sizes", {{"-1", 32}, {"type", "dynamic"}, {"scale_bits", {8, 0}}}}};
    const json fp8 = {{"num_bits", {4, 3}}, {"axis", nullptr}};
    // QuantLab's own resolution of the plan, layer by layer.
    test::QuantizedTiny t;
    t.opened = open_model(test::tiny_llama());
    QuantizedModel q(*t.opened.model, parse_recipe(kModeloptPlan, "test"));
    int64_t quantized = 0, bf16 = 0;
    for (const auto& lp : q.layers()) {
        const std::string& l = lp->name();
        const json* w = entry_named(qc, "*" + l + ".weight_quantizer");
        const json* in = entry_named(qc, "*" + l + ".input_quantizer");
        if (!lp->weight_configured()) {
            ++bf16;
            const json* off = entry_named(qc, "*" + l + ".*_quantizer");
            ASSERT_NE(off, nullptr) << l;
            EXPECT_EQ((*off)["enable"], false) << l;
            EXPECT_EQ(w, nullptr) << l;
            continue;
        }
        ++quantized;
        ASSERT_NE(w, nullptr) << l;
        ASSERT_NE(in, nullptr) << l;
        const std::string format = lp->plan().weight.options.format;
        if (format == "nvfp4") {
            EXPECT_EQ((*w)["cfg"], nvfp4) << l;
            EXPECT_EQ((*in)["cfg"], nvfp4) << l;
        } else if (format == "mxfp4") {
            EXPECT_EQ((*w)["cfg"], mxfp4) << l;
            EXPECT_EQ((*in)["cfg"], mxfp4) << l;
        } else if (format == "fp8_e4m3") {
            EXPECT_EQ((*w)["cfg"], fp8) << l;
            EXPECT_EQ((*in)["cfg"], fp8) << l;
        } else if (format == "int8") {
            EXPECT_EQ(l, "model.layers.1.self_attn.v_proj");
            EXPECT_EQ((*w)["cfg"], json({{"num_bits", 8}, {"narrow_range", true}, {"axis", 0}})) << l;
            EXPECT_EQ((*in)["enable"], false) << l;
        } else {
            EXPECT_EQ(l, "model.layers.1.self_attn.o_proj");
            EXPECT_EQ((*w)["cfg"], json({{"num_bits", 4}, {"narrow_range", true}, {"block_sizes", {{"-1", 32}, {"type", "static"}}}}))
                << l;
            EXPECT_EQ((*in)["enable"], false) << l;
        }
    }
    // 2 layers x (q k v o gate up down) + lm_head: o_proj of layer 0 and lm_head in BF16.
    EXPECT_EQ(quantized, 13);
    EXPECT_EQ(bf16, 2);
    EXPECT_EQ(p.quantized_layers, quantized);
    EXPECT_EQ(p.ignored_layers, bf16);
    EXPECT_EQ(qc.size(), 1u + 2u * 13u + 2u);
}

TEST(PlanExport, ModeloptRefusesWhatModelOptimizerCannotExpressNamingTheLayer) {
    const std::string gguf = test::recipe("max", R"({"format": "gguf_q4_0"})");
    try {
        export_plan(test::tiny_llama(), gguf, "modelopt");
        FAIL() << "a GGUF format was exported as a Model Optimizer config";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("layer model.layers.0.self_attn.q_proj (weight quantizer): format gguf_q4_0"),
                  std::string::npos)
            << e.what();
    }
    const std::string asym = test::recipe("max", R"({"format": "int4", "granularity": "group", "group_size": 32, "asymmetric": true})");
    EXPECT_THROW(export_plan(test::tiny_llama(), asym, "modelopt"), UserError);
    const std::string e5m2 = test::recipe("max", R"({"format": "fp8_e5m2"})");
    EXPECT_THROW(export_plan(test::tiny_llama(), e5m2, "modelopt"), UserError);
}

// GGUF Q8_0 attention, Q4_0 MLP, GGML MXFP4 down projections, Q5_0 lm_head, o_proj of layer 1 in BF16.
const char* kLlamaPlan = R"({"algorithm": "max", "quant_cfg": [
    {"quantizer_name": "*self_attn*weight_quantizer", "cfg": {"format": "gguf_q8_0"}},
    {"quantizer_name": "*mlp*weight_quantizer", "cfg": {"format": "gguf_q4_0"}},
    {"quantizer_name": "*down_proj*weight_quantizer", "cfg": {"format": "gguf_mxfp4"}},
    {"quantizer_name": "*layers.1.self_attn.o_proj*", "enable": false},
    {"quantizer_name": "*lm_head.weight_quantizer", "cfg": {"format": "gguf_q5_0"}}]})";

// The GGML type a test expects for a QuantLab format (written out here, not taken from the exporter).
GgmlType expected_type(const LayerQuantizer& l) {
    if (!l.weight_configured()) return GgmlType::F16;
    static const std::map<std::string, GgmlType> types = {
        {"gguf_q8_0", GgmlType::Q8_0}, {"gguf_q4_0", GgmlType::Q4_0}, {"gguf_mxfp4", GgmlType::MXFP4}, {"gguf_q5_0", GgmlType::Q5_0}};
    return types.at(l.plan().weight.options.format);
}

TEST(PlanExport, LlamaTensorTypesGiveEveryTensorThePlansTypeAndNothingElse) {
    const PlanExport p = export_plan(test::tiny_llama(), kLlamaPlan, "llama-tensor-types");
    // The arguments as llama-quantize parses them: pattern lower-cased, type by name.
    std::vector<std::pair<std::regex, GgmlType>> patterns;
    std::vector<GgufTypeOverride> overrides;
    std::optional<GgmlType> output_type;
    std::istringstream lines(p.text);
    for (std::string option, value; lines >> option >> value;) {
        if (option == "--output-tensor-type") {
            output_type = parse_gguf_tensor_type(value, "test");
            continue;
        }
        ASSERT_EQ(option, "--tensor-type") << p.text;
        const size_t eq = value.find('=');
        ASSERT_NE(eq, std::string::npos) << value;
        std::string pattern = value.substr(0, eq);
        std::transform(pattern.begin(), pattern.end(), pattern.begin(), [](unsigned char c) { return std::tolower(c); });
        patterns.emplace_back(std::regex(pattern), parse_gguf_tensor_type(value.substr(eq + 1), "test"));
        overrides.push_back({pattern, patterns.back().second});
    }
    ASSERT_TRUE(output_type.has_value()) << p.text;
    EXPECT_EQ(*output_type, GgmlType::Q5_0);

    test::QuantizedTiny t;
    t.opened = open_model(test::tiny_llama());
    QuantizedModel q(*t.opened.model, parse_recipe(kLlamaPlan, "test"));
    const ModelConfig& config = t.opened.model->config();
    std::map<std::string, GgmlType> plan;  // GGUF tensor -> the plan's type
    for (const auto& lp : q.layers()) plan[gguf_tensor_name(config, lp->name() + ".weight")->name] = expected_type(*lp);
    ASSERT_EQ(plan.size(), 15u);
    EXPECT_EQ(plan["blk.1.attn_output.weight"], GgmlType::F16);

    GgufMixModel mm{"llama", config.num_layers, config.num_heads, config.num_kv_heads, 0};
    std::vector<GgufMixTensor> tensors;
    int64_t matched = 0;
    for (const auto& [hf_name, tensor] : t.opened.model->named_parameters()) {
        const auto name = gguf_tensor_name(config, hf_name);
        if (!name) continue;
        tensors.push_back({name->name, std::vector<int64_t>(tensor.sizes().rbegin(), tensor.sizes().rend()), GgmlType::F32});
        const auto hit = std::find_if(patterns.begin(), patterns.end(),
                                      [&](const auto& pt) { return std::regex_search(name->name, pt.first); });
        const auto it = plan.find(name->name);
        if (it == plan.end() || name->name == "output.weight") {
            EXPECT_EQ(hit, patterns.end()) << name->name << " is not in the plan but a --tensor-type matches it";
            continue;
        }
        ASSERT_NE(hit, patterns.end()) << name->name << " has no --tensor-type";
        EXPECT_EQ(hit->second, it->second) << name->name;
        ++matched;
    }
    EXPECT_EQ(matched, 14);  // the 14 block matrices; lm_head through --output-tensor-type

    // llama-quantize's own choice (QuantLab's port) with these arguments over a Q4_K_M mix.
    GgufMixOptions mix;
    mix.file_type = "q4_k_m";
    mix.overrides = overrides;
    mix.output_tensor_type = output_type;
    for (const GgufTensorChoice& c : plan_gguf_types(mm, tensors, mix)) {
        const auto it = plan.find(c.name);
        if (it == plan.end()) continue;
        EXPECT_EQ(c.type, it->second) << c.name << ": " << c.rule << " " << c.fallback;
    }
}

TEST(PlanExport, LlamaTensorTypesRefuseFormatsWithoutAGgmlTypeNamingTheFirstLayer) {
    try {
        export_plan(test::tiny_llama(), kModeloptPlan, "llama-tensor-types");
        FAIL() << "an NVFP4 plan was exported as llama.cpp tensor types";
    } catch (const UserError& e) {
        // The first layer in the model's order quantizes its input (FP8 W8A8 q_proj).
        EXPECT_NE(std::string(e.what()).find("layer model.layers.0.self_attn.q_proj"), std::string::npos) << e.what();
    }
    try {
        export_plan(test::tiny_llama(), test::recipe("max", R"({"format": "nvfp4"})"), "llama-tensor-types");
        FAIL() << "an NVFP4 plan was exported as llama.cpp tensor types";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("layer model.layers.0.self_attn.q_proj is planned in nvfp4"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(llama_tensor_type_pattern("blk.1.attn_q.weight"), "^blk\\.1\\.attn_q\\.weight$");
    EXPECT_FALSE(std::regex_search("blk.10.attn_q.weight", std::regex(llama_tensor_type_pattern("blk.1.attn_q.weight"))));
}

}  // namespace
}  // namespace ql
