// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's per-tensor type rules (engine/export/gguf_type_mix.h), against choices worked out
// by hand from llama-quant.cpp. The full comparison with llama.cpp itself (llama_model_quantize
// over every file type, with and without an imatrix and overrides) is scripts/check-gguf-mixes.
#include "engine/export/gguf_type_mix.h"

#include <gtest/gtest.h>

#include <map>

#include "engine/core/errors.h"

namespace ql {
namespace {

// A dense Llama's tensors as convert_hf_to_gguf writes them (F16 matrices, F32 norms), in the
// order a model lists them (the planner sorts).
std::vector<GgufMixTensor> llama_tensors(int layers, int64_t hidden, int64_t kv_rows, int64_t ffn, int64_t vocab, bool tied) {
    std::vector<GgufMixTensor> t;
    t.push_back({"token_embd.weight", {hidden, vocab}, GgmlType::F16});
    for (int i = 0; i < layers; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        t.push_back({b + "attn_norm.weight", {hidden}, GgmlType::F32});
        t.push_back({b + "attn_q.weight", {hidden, hidden}, GgmlType::F16});
        t.push_back({b + "attn_k.weight", {hidden, kv_rows}, GgmlType::F16});
        t.push_back({b + "attn_v.weight", {hidden, kv_rows}, GgmlType::F16});
        t.push_back({b + "attn_output.weight", {hidden, hidden}, GgmlType::F16});
        t.push_back({b + "ffn_norm.weight", {hidden}, GgmlType::F32});
        t.push_back({b + "ffn_gate.weight", {hidden, ffn}, GgmlType::F16});
        t.push_back({b + "ffn_up.weight", {hidden, ffn}, GgmlType::F16});
        t.push_back({b + "ffn_down.weight", {ffn, hidden}, GgmlType::F16});
    }
    t.push_back({"output_norm.weight", {hidden}, GgmlType::F32});
    if (!tied) t.push_back({"output.weight", {hidden, vocab}, GgmlType::F16});
    return t;
}

std::map<std::string, GgufTensorChoice> by_name(const std::vector<GgufTensorChoice>& plan) {
    std::map<std::string, GgufTensorChoice> m;
    for (const auto& c : plan) m[c.name] = c;
    return m;
}

GgufMixModel llama_model(int layers, int heads, int kv) {
    GgufMixModel m;
    m.architecture = "llama";
    m.n_layer = layers;
    m.n_head = heads;
    m.n_head_kv = kv;
    return m;
}

TEST(GgufTypeMix, Q4KMGivesAttnVAndFfnDownMoreBitsWhereUseMoreBitsSays) {
    GgufMixOptions o;
    o.file_type = "q4_k_m";
    const auto plan = plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o);
    const auto c = by_name(plan);
    // use_more_bits(i, 8) = i < 1 || i >= 7 || (i - 1) % 3 == 2: layers 0, 3, 6, 7.
    for (int i = 0; i < 8; ++i) {
        const bool more = i == 0 || i == 3 || i == 6 || i == 7;
        const std::string b = "blk." + std::to_string(i) + ".";
        EXPECT_EQ(c.at(b + "attn_v.weight").type, more ? GgmlType::Q6_K : GgmlType::Q4_K) << i;
        EXPECT_EQ(c.at(b + "ffn_down.weight").type, more ? GgmlType::Q6_K : GgmlType::Q4_K) << i;
        EXPECT_EQ(c.at(b + "attn_q.weight").type, GgmlType::Q4_K) << i;
        EXPECT_EQ(c.at(b + "ffn_up.weight").type, GgmlType::Q4_K) << i;
        EXPECT_EQ(c.at(b + "attn_norm.weight").type, GgmlType::F32) << i;
        EXPECT_FALSE(c.at(b + "attn_norm.weight").quantized);
    }
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q6_K);
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::Q4_K);
    EXPECT_NE(c.at("blk.3.attn_v.weight").rule.find("use_more_bits(3, 8)"), std::string::npos) << c.at("blk.3.attn_v.weight").rule;
    // llama.cpp's order: non-block tensors first (by name), then block by block (by name).
    EXPECT_EQ(plan.front().name, "output.weight");
    EXPECT_EQ(plan[1].name, "output_norm.weight");
    EXPECT_EQ(plan[2].name, "token_embd.weight");
    EXPECT_EQ(plan[3].name, "blk.0.attn_k.weight");
    EXPECT_EQ(plan.back().name, "blk.7.ffn_up.weight");
}

TEST(GgufTypeMix, RowsNotAMultipleOf256FallBackAsLlamaCppDoesAndSayWhy) {
    // The demo's shape: hidden 192, MLP 512, 4 layers.
    GgufMixOptions o;
    o.file_type = "q5_k_m";
    const auto c = by_name(plan_gguf_types(llama_model(4, 6, 2), llama_tensors(4, 192, 64, 512, 48, false), o));
    EXPECT_EQ(c.at("blk.1.attn_q.weight").rule_type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("blk.1.attn_q.weight").type, GgmlType::Q5_1);
    EXPECT_EQ(c.at("blk.1.attn_q.weight").fallback, "ne[0] 192 is not a multiple of 256 (Q5_K) -> Q5_1");
    // ffn_down rows are 512 long: no fallback. use_more_bits(i, 4) = i >= 3 || i % 3 == 2: layers 2, 3.
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("blk.1.ffn_down.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("blk.2.ffn_down.weight").type, GgmlType::Q6_K);
    EXPECT_EQ(c.at("blk.3.ffn_down.weight").type, GgmlType::Q6_K);
    EXPECT_TRUE(c.at("blk.1.ffn_down.weight").fallback.empty());
    // attn_v Q6_K on 192-wide rows -> Q8_0; output: ne[0] % 256 != 0 -> Q8_0 by the output rule.
    EXPECT_EQ(c.at("blk.2.attn_v.weight").rule_type, GgmlType::Q6_K);
    EXPECT_EQ(c.at("blk.2.attn_v.weight").type, GgmlType::Q8_0);
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::Q5_1);
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q8_0);
    EXPECT_TRUE(c.at("output.weight").fallback.empty());

    GgufMixOptions q3;
    q3.file_type = "q3_k_m";
    const auto d = by_name(plan_gguf_types(llama_model(4, 6, 2), llama_tensors(4, 192, 64, 512, 48, false), q3));
    EXPECT_EQ(d.at("blk.2.attn_q.weight").type, GgmlType::Q4_0);    // Q3_K -> Q4_0
    EXPECT_EQ(d.at("blk.2.attn_output.weight").type, GgmlType::Q5_0);  // Q3_K_M attn_output Q4_K -> Q5_0
    EXPECT_EQ(d.at("blk.0.attn_v.weight").rule_type, GgmlType::Q5_K);  // the first two attn_v: Q5_K
    EXPECT_EQ(d.at("blk.2.attn_v.weight").rule_type, GgmlType::Q4_K);
}

TEST(GgufTypeMix, Q2KDependsOnGroupedQueryAttentionAndQ3KLOnEveryRole) {
    GgufMixOptions o;
    o.file_type = "q2_k";
    auto c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o));  // n_gqa 4
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::Q4_K);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q3_K);
    EXPECT_EQ(c.at("blk.0.attn_output.weight").type, GgmlType::Q3_K);
    EXPECT_EQ(c.at("blk.0.attn_q.weight").type, GgmlType::Q2_K);
    c = by_name(plan_gguf_types(llama_model(8, 8, 8), llama_tensors(8, 256, 256, 512, 512, false), o));  // n_gqa 1
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::Q3_K);
    o.file_type = "q3_k_l";
    c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o));
    for (const char* t : {"attn_v", "ffn_down", "attn_output"}) EXPECT_EQ(c.at(std::string("blk.5.") + t + ".weight").type, GgmlType::Q5_K) << t;
    EXPECT_EQ(c.at("blk.5.ffn_gate.weight").type, GgmlType::Q3_K);
}

TEST(GgufTypeMix, TiedEmbeddingsTakeTheOutputRule) {
    GgufMixOptions o;
    o.file_type = "q4_k_s";
    const auto c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, true), o));
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::Q6_K);
    // Q4_K_S: the first 4 attn_v and the first n/8 ffn_down Q5_K.
    EXPECT_EQ(c.at("blk.3.attn_v.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("blk.4.attn_v.weight").type, GgmlType::Q4_K);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("blk.1.ffn_down.weight").type, GgmlType::Q4_K);
}

TEST(GgufTypeMix, OverridesWinSkipTheCountersAndStillFallBack) {
    GgufMixOptions o;
    o.file_type = "q4_k_m";
    o.overrides = {{"blk\\.0\\.attn_v", GgmlType::Q8_0}, {"ATTN_V", GgmlType::Q5_K}, {"ffn_up", GgmlType::Q4_K}};
    const auto c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o));
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::Q8_0);  // first match wins
    EXPECT_EQ(c.at("blk.1.attn_v.weight").type, GgmlType::Q5_K);  // patterns are lower-cased, as llama-quantize does
    EXPECT_NE(c.at("blk.1.attn_v.weight").rule.find("--tensor-type"), std::string::npos);
    // ffn_down keeps the mix rule.
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q6_K);

    // An override on a tensor whose rows do not fit the type falls back like a mix choice.
    GgufMixOptions f;
    f.file_type = "q8_0";
    f.overrides = {{"attn_q", GgmlType::Q6_K}};
    const auto d = by_name(plan_gguf_types(llama_model(4, 6, 2), llama_tensors(4, 192, 64, 512, 48, false), f));
    EXPECT_EQ(d.at("blk.0.attn_q.weight").rule_type, GgmlType::Q6_K);
    EXPECT_EQ(d.at("blk.0.attn_q.weight").type, GgmlType::Q8_0);
    EXPECT_FALSE(d.at("blk.0.attn_q.weight").fallback.empty());
}

TEST(GgufTypeMix, CountersOnlyAdvanceForTensorsTheRulesSee) {
    // Overriding blk.0's attn_v keeps it out of the attn_v count: blk.1 is then attn_v #0.
    GgufMixOptions o;
    o.file_type = "q3_k_m";
    o.overrides = {{"blk\\.0\\.attn_v", GgmlType::Q8_0}};
    const auto c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o));
    EXPECT_EQ(c.at("blk.1.attn_v.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("blk.2.attn_v.weight").type, GgmlType::Q5_K);  // #1: still one of "the first 2"
    EXPECT_EQ(c.at("blk.3.attn_v.weight").type, GgmlType::Q4_K);
}

TEST(GgufTypeMix, ImatrixChangesQ4_0FfnDownAndQ2KSNeedsOne) {
    GgufMixOptions o;
    o.file_type = "q4_0";
    auto c = by_name(plan_gguf_types(llama_model(16, 8, 2), llama_tensors(16, 256, 64, 512, 512, false), o));
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q4_0);
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q6_K);  // every quantized file type: output Q6_K
    o.has_imatrix = true;
    c = by_name(plan_gguf_types(llama_model(16, 8, 2), llama_tensors(16, 256, 64, 512, 512, false), o));
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q4_1);
    EXPECT_EQ(c.at("blk.1.ffn_down.weight").type, GgmlType::Q4_1);  // n/8 = 2
    EXPECT_EQ(c.at("blk.2.ffn_down.weight").type, GgmlType::Q4_0);
    GgufMixOptions s;
    s.file_type = "q2_k_s";
    EXPECT_THROW(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), s), UserError);
    s.has_imatrix = true;
    c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), s));
    EXPECT_TRUE(c.at("blk.3.attn_q.weight").requires_imatrix);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q4_K);
}

TEST(GgufTypeMix, PureAndFloatFileTypesSkipTheRules) {
    GgufMixOptions o;
    o.file_type = "q4_k_m";
    o.pure = true;
    auto c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o));
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::Q4_K);
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q4_K);
    GgufMixOptions f;
    f.file_type = "f16";
    c = by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), f));
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::F16);
    EXPECT_EQ(c.at("blk.0.attn_norm.weight").type, GgmlType::F32);
}

TEST(GgufTypeMix, Gpt2FusedQkvFollowsTheAttnVColumnAndPositionsStayUnquantized) {
    GgufMixModel m;
    m.architecture = "gpt2";
    m.n_layer = 8;
    m.n_head = m.n_head_kv = 4;
    std::vector<GgufMixTensor> t = {{"token_embd.weight", {256, 300}, GgmlType::F16},
                                    {"position_embd.weight", {256, 64}, GgmlType::F32}};
    for (int i = 0; i < 8; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        t.push_back({b + "attn_qkv.weight", {256, 768}, GgmlType::F16});
        t.push_back({b + "attn_qkv.bias", {768}, GgmlType::F32});
        t.push_back({b + "attn_output.weight", {256, 256}, GgmlType::F16});
        t.push_back({b + "ffn_up.weight", {256, 1024}, GgmlType::F16});
        t.push_back({b + "ffn_down.weight", {1024, 256}, GgmlType::F16});
    }
    GgufMixOptions o;
    o.file_type = "q5_k_m";
    const auto c = by_name(plan_gguf_types(m, t, o));
    EXPECT_EQ(c.at("blk.0.attn_qkv.weight").type, GgmlType::Q6_K);  // use_more_bits(0, 8), attn_v's rule
    EXPECT_EQ(c.at("blk.1.attn_qkv.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("position_embd.weight").type, GgmlType::F32);
    EXPECT_FALSE(c.at("position_embd.weight").quantized);
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::Q6_K);       // tied (no output.weight)
}

TEST(GgufTypeMix, FileTypesAndTensorTypeNames) {
    EXPECT_EQ(find_gguf_file_type("Q4_K_M")->id, 15u);
    EXPECT_EQ(find_gguf_file_type("q4_k")->name, "q4_k_m");  // llama-quantize's alias
    EXPECT_EQ(find_gguf_file_type("q6_k")->id, 18u);
    EXPECT_EQ(find_gguf_file_type(2u)->name, "q4_0");
    EXPECT_EQ(find_gguf_file_type("q4_k_m")->llama_name, "MOSTLY_Q4_K_M");
    EXPECT_EQ(find_gguf_file_type("iq2_xxs")->id, 19u);
    EXPECT_EQ(find_gguf_file_type("iq4_ks"), nullptr);
    EXPECT_EQ(parse_gguf_tensor_type("Q6_K", "t"), GgmlType::Q6_K);
    EXPECT_EQ(parse_gguf_tensor_type("iq4_nl", "t"), GgmlType::IQ4_NL);
    EXPECT_EQ(parse_gguf_tensor_type("iq2_xxs", "t"), GgmlType::IQ2_XXS);
    EXPECT_THROW(parse_gguf_tensor_type("q8_k", "t"), UserError);
    EXPECT_THROW(plan_gguf_types(llama_model(8, 8, 2), {}, GgufMixOptions{"q9_k"}), UserError);
    GgufMixOptions bad;
    bad.overrides = {{"attn_v[", GgmlType::Q8_0}};
    EXPECT_THROW(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(1, 256, 64, 512, 512, false), bad), UserError);
    EXPECT_TRUE(gguf_weight_order("output.weight", "blk.0.attn_k.weight"));
    EXPECT_TRUE(gguf_weight_order("blk.2.ffn_up.weight", "blk.10.attn_k.weight"));
    EXPECT_TRUE(gguf_weight_order("blk.2.attn_k.weight", "blk.2.attn_q.weight"));
}

TEST(GgufTypeMix, LowBitIQuantMixesFollowLlamaCppsIq1Iq2Branch) {
    // llama_tensor_get_type_impl's branch for IQ2_XXS / IQ2_XS / IQ2_S / IQ2_M / IQ1_S / IQ1_M.
    GgufMixOptions o;
    o.has_imatrix = true;
    const auto tensors = llama_tensors(8, 256, 256, 512, 512, false);  // n_gqa 1
    o.file_type = "iq2_m";  // base IQ2_S
    auto c = by_name(plan_gguf_types(llama_model(8, 8, 8), tensors, o));
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.3.attn_v.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::IQ3_S);  // the first n/8
    EXPECT_EQ(c.at("blk.1.ffn_down.weight").type, GgmlType::IQ2_S);
    EXPECT_EQ(c.at("blk.1.attn_output.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.1.attn_q.weight").type, GgmlType::IQ2_S);
    EXPECT_EQ(c.at("blk.1.ffn_up.weight").type, GgmlType::IQ2_S);
    EXPECT_TRUE(c.at("blk.1.ffn_up.weight").requires_imatrix);
    EXPECT_FALSE(c.at("blk.1.attn_v.weight").requires_imatrix);  // IQ3_S
    EXPECT_FALSE(c.at("output.weight").requires_imatrix);
    // Grouped-query attention: attn_v Q4_K.
    EXPECT_EQ(by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o)).at("blk.0.attn_v.weight").type,
              GgmlType::Q4_K);
    o.file_type = "iq2_s";  // base IQ2_XS
    c = by_name(plan_gguf_types(llama_model(8, 8, 8), tensors, o));
    EXPECT_EQ(c.at("blk.1.attn_q.weight").type, GgmlType::IQ2_XS);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::IQ3_S);
    o.file_type = "iq1_s";
    c = by_name(plan_gguf_types(llama_model(8, 8, 8), tensors, o));
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::Q2_K);
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("blk.2.attn_v.weight").type, GgmlType::Q2_K);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q2_K);
    EXPECT_EQ(c.at("blk.2.ffn_down.weight").type, GgmlType::IQ1_S);
    EXPECT_EQ(c.at("blk.2.attn_output.weight").type, GgmlType::IQ2_XXS);
    EXPECT_EQ(c.at("blk.2.ffn_gate.weight").type, GgmlType::IQ1_S);
    o.file_type = "iq1_m";
    EXPECT_EQ(by_name(plan_gguf_types(llama_model(8, 8, 8), tensors, o)).at("blk.2.attn_k.weight").type, GgmlType::IQ1_M);
    o.file_type = "iq2_xxs";
    c = by_name(plan_gguf_types(llama_model(8, 8, 8), tensors, o));
    EXPECT_EQ(c.at("blk.2.attn_output.weight").type, GgmlType::IQ2_XXS);
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::Q2_K);
    // Without an imatrix llama-quantize refuses these mixes (tensor_requires_imatrix).
    o.has_imatrix = false;
    for (const char* ft : {"iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq1_s", "iq1_m", "iq3_xxs"}) {
        o.file_type = ft;
        EXPECT_THROW(plan_gguf_types(llama_model(8, 8, 8), tensors, o), UserError) << ft;
    }
}

TEST(GgufTypeMix, Iq3MixesAndTernaryTypes) {
    GgufMixOptions o;
    const auto dense = llama_tensors(8, 256, 256, 512, 512, false);  // n_gqa 1
    o.file_type = "iq3_xs";  // base IQ3_S; IQ3_XXS tensors need the imatrix
    o.has_imatrix = true;
    auto c = by_name(plan_gguf_types(llama_model(8, 8, 8), dense, o));
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q6_K);
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.0.attn_k.weight").type, GgmlType::IQ3_XXS);
    EXPECT_EQ(c.at("blk.0.attn_q.weight").type, GgmlType::IQ3_XXS);
    EXPECT_EQ(c.at("blk.0.attn_output.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::IQ3_S);
    // ffn_gate / ffn_up: IQ3_XXS for n/8 <= i < 7n/8.
    for (int i = 0; i < 8; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        const GgmlType want = i >= 1 && i < 7 ? GgmlType::IQ3_XXS : GgmlType::IQ3_S;
        EXPECT_EQ(c.at(b + "ffn_gate.weight").type, want) << i;
        EXPECT_EQ(c.at(b + "ffn_up.weight").type, want) << i;
    }
    EXPECT_EQ(by_name(plan_gguf_types(llama_model(8, 8, 2), llama_tensors(8, 256, 64, 512, 512, false), o)).at("blk.0.attn_v.weight").type,
              GgmlType::Q4_K);

    o.file_type = "iq3_xxs";
    c = by_name(plan_gguf_types(llama_model(8, 8, 8), dense, o));
    EXPECT_EQ(c.at("output.weight").type, GgmlType::Q5_K);
    EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.0.attn_v.weight").type, GgmlType::IQ3_XXS);  // with an imatrix
    EXPECT_EQ(c.at("blk.0.attn_k.weight").type, GgmlType::IQ2_S);
    EXPECT_EQ(c.at("blk.0.attn_q.weight").type, GgmlType::IQ2_S);
    EXPECT_EQ(c.at("blk.0.attn_output.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::IQ3_XXS);
    EXPECT_TRUE(c.at("blk.0.ffn_down.weight").requires_imatrix);

    o.file_type = "iq3_m";  // no imatrix needed: IQ3_S and K types only
    o.has_imatrix = false;
    c = by_name(plan_gguf_types(llama_model(8, 8, 8), dense, o));
    EXPECT_EQ(c.at("blk.5.attn_v.weight").type, GgmlType::Q4_K);
    EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, GgmlType::Q4_K);
    EXPECT_EQ(c.at("blk.1.ffn_down.weight").type, GgmlType::IQ3_S);
    EXPECT_EQ(c.at("blk.1.attn_output.weight").type, GgmlType::Q4_K);
    EXPECT_EQ(c.at("blk.1.ffn_up.weight").type, GgmlType::IQ3_S);
    o.file_type = "iq3_s";
    EXPECT_EQ(by_name(plan_gguf_types(llama_model(8, 8, 8), dense, o)).at("blk.1.attn_v.weight").type, GgmlType::IQ3_S);

    for (const char* ft : {"tq1_0", "tq2_0"}) {
        o.file_type = ft;
        c = by_name(plan_gguf_types(llama_model(8, 8, 8), dense, o));
        const GgmlType base = find_gguf_file_type(ft)->base;
        EXPECT_EQ(c.at("token_embd.weight").type, GgmlType::Q4_K) << ft;
        EXPECT_EQ(c.at("output.weight").type, GgmlType::Q6_K) << ft;
        EXPECT_EQ(c.at("blk.0.attn_v.weight").type, base) << ft;
        EXPECT_EQ(c.at("blk.0.ffn_down.weight").type, base) << ft;
        EXPECT_FALSE(c.at("blk.0.ffn_down.weight").requires_imatrix) << ft;
    }
    // Rows that are not whole super-blocks: the i-quants fall back to IQ4_NL, the ternary types to Q4_0.
    o.file_type = "tq2_0";
    c = by_name(plan_gguf_types(llama_model(4, 6, 2), llama_tensors(4, 192, 64, 512, 48, false), o));
    EXPECT_EQ(c.at("blk.1.attn_q.weight").type, GgmlType::Q4_0);
    o.file_type = "iq3_s";
    c = by_name(plan_gguf_types(llama_model(4, 6, 2), llama_tensors(4, 192, 64, 512, 48, false), o));
    EXPECT_EQ(c.at("blk.1.attn_q.weight").type, GgmlType::IQ4_NL);
    EXPECT_EQ(c.at("blk.1.attn_q.weight").fallback, "ne[0] 192 is not a multiple of 256 (IQ3_S) -> IQ4_NL");
}

}  // namespace
}  // namespace ql
