// SPDX-License-Identifier: GPL-3.0-or-later
// The compressed-tensors export (engine/export/compressed_tensors_*): scheme mapping and byte
// layouts for known inputs, every supported scheme decoding back to QuantLab's quantized weight
// exactly (QuantLab's arithmetic), the config.json quantization_config, several config groups for
// mixed recipes, KV-cache scales, and refusals before anything is written. compressed-tensors'
// own decompressor checks the same exports in scripts/check-compressed-tensors (ctest
// interop.compressed_tensors_decompress).
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <cstring>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/export/compressed_tensors_export.h"
#include "engine/export/compressed_tensors_layout.h"
#include "engine/export/doctor_context.h"
#include "engine/export/export_manifest.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/whole_file.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/quant_plan.h"
#include "export_test_support.h"
#include "kernels/nvfp4.h"
#include "user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::quantize_tiny;
using test::recipe;
using test::user_error_text;

const char* kQProj = "model.layers.0.self_attn.q_proj";

// q_proj of the tiny Llama with a weight we choose, weight-only.
struct OneLayer {
    OpenedModel opened = open_model(test::tiny_llama());
    std::unique_ptr<QuantizedModel> q;
    LayerQuantizer* layer = nullptr;
    OneLayer(const std::string& weight_cfg, const std::function<void(at::Tensor&)>& fill) {
        at::Tensor& w = opened.model->find_layer(kQProj)->weight;
        {
            at::NoGradGuard g;
            w.zero_();
            fill(w);
        }
        q = std::make_unique<QuantizedModel>(*opened.model, parse_recipe(R"({"quant_cfg": [{"quantizer_name": ")" + std::string(kQProj) +
                                                                             R"(.weight_quantizer", "cfg": )" + weight_cfg + "}]}",
                                                                         "one layer"));
        q->set_enabled(true);
        layer = q->find(kQProj);
    }
};

const ExportTensor& tensor(const std::vector<ExportTensor>& ts, const std::string& suffix) {
    for (const auto& t : ts)
        if (t.name == std::string(kQProj) + "." + suffix) return t;
    throw std::runtime_error("no tensor " + suffix);
}

uint32_t word(const ExportTensor& t, int64_t i) {
    uint32_t v;
    std::memcpy(&v, t.bytes.data() + i * 4, 4);
    return v;
}

float f32(const ExportTensor& t, int64_t i = 0) {
    float v;
    std::memcpy(&v, t.bytes.data() + i * 4, 4);
    return v;
}

// Decoding the packed layer with QuantLab's arithmetic gives the quantized weight bit for bit.
void expect_exact(LayerQuantizer& l, const CtScheme& s, const CtPackedLayer& p) {
    const std::vector<int64_t> shape = weight_matrix_shape(l.layer());
    const std::vector<float> y = dequantize_ct_layer(l.name(), s, shape[0], shape[1], p.tensors, CtArithmetic::QuantLab, p.nvfp4_global_scale);
    const at::Tensor q = l.quantized_weight().reshape(shape).contiguous();
    const float* w = q.data_ptr<float>();
    for (int64_t i = 0; i < shape[0] * shape[1]; ++i) ASSERT_TRUE(y[static_cast<size_t>(i)] == w[i]) << l.name() << " element " << i;
}

TEST(CompressedTensorsLayout, Int4SymmetricPacksCodePlus8LsbFirstIntoInt32Words) {
    OneLayer one(R"({"format": "int4", "granularity": "group", "group_size": 32})", [](at::Tensor& w) {
        w[0][0] = 7.0f;
        w[0][1] = -7.0f;
        w[0][2] = -3.0f;
        w[0][3] = 1.0f;
    });
    const CtScheme s = ct_scheme_of(*one.layer);
    EXPECT_EQ(s.format, "pack-quantized");
    EXPECT_EQ(s.weights.strategy, "group");
    EXPECT_EQ(s.weights.group_size, 32);
    EXPECT_TRUE(s.weights.symmetric);
    EXPECT_FALSE(s.input);
    const CtPackedLayer p = pack_ct_layer(*one.layer, s);
    const ExportTensor& w = tensor(p.tensors, "weight_packed");
    EXPECT_EQ(w.dtype, SafetensorsDtype::I32);
    EXPECT_EQ(w.shape, (std::vector<int64_t>{64, 8}));
    // Codes 7, -7, -3, 1, then zeros, stored + 8: 15, 1, 5, 9, 8, 8, 8, 8, element i at bits 4i.
    EXPECT_EQ(word(w, 0), 0x8888951Fu);
    EXPECT_EQ(word(w, 1), 0x88888888u);
    const ExportTensor& sc = tensor(p.tensors, "weight_scale");
    EXPECT_EQ(sc.dtype, SafetensorsDtype::F32);
    EXPECT_EQ(sc.shape, (std::vector<int64_t>{64, 2}));
    EXPECT_EQ(f32(sc, 0), 1.0f);  // QuantLab's amax / 7 (compressed-tensors' observer would use amax / 7.5)
    const ExportTensor& ws = tensor(p.tensors, "weight_shape");
    EXPECT_EQ(ws.dtype, SafetensorsDtype::I64);
    int64_t dims[2];
    std::memcpy(dims, ws.bytes.data(), 16);
    EXPECT_EQ(dims[0], 64);
    EXPECT_EQ(dims[1], 64);
    expect_exact(*one.layer, s, p);
}

TEST(CompressedTensorsLayout, AsymmetricZeroPointsArePackedAlongTheOutputDimension) {
    OneLayer one(R"({"format": "int4", "granularity": "group", "group_size": 32, "asymmetric": true})", [](at::Tensor& w) {
        for (int r = 0; r < 64; ++r)
            for (int c = 0; c < 64; ++c) w[r][c] = 0.01f * static_cast<float>((r * 7 + c * 3) % 23) - 0.05f * static_cast<float>(r % 5);
    });
    const CtScheme s = ct_scheme_of(*one.layer);
    EXPECT_FALSE(s.weights.symmetric);
    const CtPackedLayer p = pack_ct_layer(*one.layer, s);
    const ExportTensor& zp = tensor(p.tensors, "weight_zero_point");
    EXPECT_EQ(zp.dtype, SafetensorsDtype::I32);
    EXPECT_EQ(zp.shape, (std::vector<int64_t>{8, 2}));  // ceil(64 * 4 / 32) words per group column
    const EncodedTensor e = one.layer->encode_weight();
    // Word k of column j holds rows 8k .. 8k+7 of group j, row 8k + i at bits 4i.
    for (int64_t k = 0; k < 8; ++k)
        for (int64_t j = 0; j < 2; ++j)
            for (int64_t i = 0; i < 8; ++i)
                EXPECT_EQ((word(zp, k * 2 + j) >> (4 * i)) & 0xF, static_cast<uint32_t>(e.zero_points[static_cast<size_t>((8 * k + i) * 2 + j)]));
    expect_exact(*one.layer, s, p);
}

TEST(CompressedTensorsLayout, Int8PerChannelAndInt3DensePackingStraddleWords) {
    for (const char* cfg : {R"({"format": "int8", "granularity": "channel"})", R"({"format": "int3", "granularity": "group", "group_size": 32})",
                            R"({"format": "int8", "granularity": "group", "group_size": 32, "asymmetric": true})"}) {
        OneLayer one(cfg, [](at::Tensor& w) {
            for (int r = 0; r < 64; ++r)
                for (int c = 0; c < 64; ++c) w[r][c] = std::sin(0.37f * static_cast<float>(r * 64 + c));
        });
        const CtScheme s = ct_scheme_of(*one.layer);
        EXPECT_EQ(s.format, "pack-quantized") << cfg;
        const CtPackedLayer p = pack_ct_layer(*one.layer, s);
        const int bits = s.weights.num_bits;
        EXPECT_EQ(tensor(p.tensors, "weight_packed").shape, (std::vector<int64_t>{64, (64 * bits + 31) / 32})) << cfg;
        expect_exact(*one.layer, s, p);
    }
}

TEST(CompressedTensorsLayout, Nvfp4StoresTheReciprocalOfModelOptimizersGlobalScale) {
    OneLayer one(R"({"format": "nvfp4"})", [](at::Tensor& w) {
        const float row[] = {1.0f, -0.5f, 2.0f, 3.0f, 4.0f, 6.0f};
        for (int i = 0; i < 6; ++i) w[0][i] = row[i];
        w[5][20] = 0.3f;
    });
    const CtScheme s = ct_scheme_of(*one.layer);
    EXPECT_EQ(s.format, "nvfp4-pack-quantized");
    EXPECT_EQ(s.weights.strategy, "tensor_group");
    EXPECT_EQ(s.weights.scale_dtype, "torch.float8_e4m3fn");
    const CtPackedLayer p = pack_ct_layer(*one.layer, s);
    const ExportTensor& w = tensor(p.tensors, "weight_packed");
    EXPECT_EQ(w.dtype, SafetensorsDtype::U8);
    EXPECT_EQ(w.shape, (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(w.bytes[0], 0x92);  // the same bytes as Model Optimizer's `weight`
    const float g = kernels::nvfp4_global_scale(6.0f);
    EXPECT_EQ(p.nvfp4_global_scale, g);
    const ExportTensor& G = tensor(p.tensors, "weight_global_scale");
    EXPECT_EQ(G.shape, std::vector<int64_t>{1});
    EXPECT_EQ(f32(G), 1.0f / g);
    EXPECT_EQ(tensor(p.tensors, "weight_scale").dtype, SafetensorsDtype::F8_E4M3);
    expect_exact(*one.layer, s, p);
    // compressed-tensors' arithmetic fl(e2m1 x fl(s8 / fl(1/g))) against QuantLab's
    // fl(e2m1 x fl(s8 x g)): five roundings of relative error <= 2^-24 between them, so at most
    // 5 float32 ulp (not 1: elements 3 and 5 of this layer, w = 3 and 6, differ by 2 or more).
    const std::vector<float> ct = dequantize_ct_layer(kQProj, s, 64, 64, p.tensors, CtArithmetic::CompressedTensors);
    const at::Tensor q = one.layer->quantized_weight().contiguous();
    const std::vector<float> ours(q.data_ptr<float>(), q.data_ptr<float>() + 64 * 64);
    const UlpDiff d = ulp_difference(ct, ours);
    EXPECT_LE(d.max_ulps, 5);
    EXPECT_GE(d.max_ulps, 2);  // this layer has elements the two arithmetics round 2 ulp apart
    // Zero codes decode to zero in both.
    for (int64_t i = 64 * 64 - 16; i < 64 * 64; ++i)
        if (ours[static_cast<size_t>(i)] == 0.0f) EXPECT_EQ(ct[static_cast<size_t>(i)], 0.0f) << i;
}

TEST(CompressedTensorsLayout, Fp8PerChannelAndMxfp4Schemes) {
    OneLayer fp8(R"({"format": "fp8_e4m3", "granularity": "channel", "axis": 0})", [](at::Tensor& w) {
        w[0][0] = 448.0f;
        w[1][0] = -2.0f;
    });
    CtScheme s = ct_scheme_of(*fp8.layer);
    EXPECT_EQ(s.format, "naive-quantized");  // weight-only FP8 (float-quantized needs input activations)
    EXPECT_EQ(s.weights.strategy, "channel");
    CtPackedLayer p = pack_ct_layer(*fp8.layer, s);
    EXPECT_EQ(tensor(p.tensors, "weight").dtype, SafetensorsDtype::F8_E4M3);
    EXPECT_EQ(tensor(p.tensors, "weight_scale").shape, (std::vector<int64_t>{64, 1}));
    EXPECT_EQ(f32(tensor(p.tensors, "weight_scale"), 0), 1.0f);
    EXPECT_EQ(tensor(p.tensors, "weight").bytes[0], 0x7E);
    expect_exact(*fp8.layer, s, p);

    OneLayer mx(R"({"format": "mxfp4"})", [](at::Tensor& w) {
        w[0][0] = 6.0f;
        w[0][1] = -1.0f;
    });
    s = ct_scheme_of(*mx.layer);
    EXPECT_EQ(s.format, "mxfp4-pack-quantized");
    EXPECT_EQ(s.weights.scale_dtype, "torch.uint8");
    p = pack_ct_layer(*mx.layer, s);
    EXPECT_EQ(tensor(p.tensors, "weight_packed").bytes[0], 0x7 | (0x8 | 0x2) << 4);
    EXPECT_EQ(tensor(p.tensors, "weight_scale").bytes[0], 127);
    expect_exact(*mx.layer, s, p);
}

TEST(CompressedTensorsLayout, GptqPinnedWeightsGetTheirOwnCodesOnTheSameScales) {
    OneLayer one(R"({"format": "int4", "granularity": "group", "group_size": 32})", [](at::Tensor& w) {
        w[0][0] = 7.0f;
        w[0][1] = 3.0f;
    });
    at::Tensor q = one.layer->quantized_weight().clone();
    q[0][1] = -5.0f;  // another grid point of the same scale (1.0)
    one.layer->pin_quantized_weight(q);
    const CtScheme s = ct_scheme_of(*one.layer);
    const CtPackedLayer p = pack_ct_layer(*one.layer, s);
    EXPECT_EQ(word(tensor(p.tensors, "weight_packed"), 0) & 0xFF, 0x3Fu);  // 7+8 = 15, -5+8 = 3
    expect_exact(*one.layer, s, p);
    q[0][2] = 0.25f;  // off the grid
    one.layer->pin_quantized_weight(q);
    EXPECT_NE(user_error_text([&] { pack_ct_layer(*one.layer, s); }).find("do not reproduce the quantized weight at element 2"),
              std::string::npos);
}

TEST(CompressedTensorsLayout, UnrepresentableLayersAreRefusedNamingTheLayerAndFormat) {
    OneLayer nf4(R"({"format": "nf4"})", [](at::Tensor&) {});
    std::string e = user_error_text([&] { ct_scheme_of(*nf4.layer); });
    EXPECT_NE(e.find(std::string("layer ") + kQProj + ": nf4"), std::string::npos) << e;
    EXPECT_NE(e.find("has no compressed-tensors layout; supported: pack-quantized"), std::string::npos) << e;
    OneLayer pqs(R"({"format": "int4", "granularity": "group", "group_size": 32})", [](at::Tensor&) {});
    pqs.layer->set_pre_quant_scale(at::ones({64}));
    e = user_error_text([&] { ct_scheme_of(*pqs.layer); });
    EXPECT_NE(e.find("pre_quant_scale"), std::string::npos) << e;
    EXPECT_NE(e.find("export with --as hf-modelopt"), std::string::npos) << e;
}

// recipe() with an algorithm object instead of a method name.
std::string recipe_with(const std::string& algorithm, const std::string& weight_cfg, const std::string& input_cfg = "") {
    std::string r = recipe("max", weight_cfg, input_cfg);
    return r.replace(r.find(R"("max")"), 5, algorithm);
}

std::string shared(const std::string& r) { return r.substr(0, r.size() - 1) + R"(, "share_fused_scales": true})"; }

struct Exported {
    std::string dir;
    json config;
    SafetensorsCheckpoint ckpt;
    ExportManifest manifest;
};

Exported export_ct(test::QuantizedTiny& m, const std::string& tag) {
    const std::string dir = test::temp_dir(tag.c_str());
    NullJobSink sink;
    CancellationToken cancel;
    export_compressed_tensors(*m.q, test::tiny_llama(), dir + "/ct", false, sink, cancel);
    return {dir, json::parse(read_whole_file(dir + "/ct/config.json", "t")), SafetensorsCheckpoint::open(dir + "/ct"),
            parse_export_manifest(read_whole_file(dir + "/ct/quantlab_export.json", "t"), "t")};
}

TEST(CompressedTensorsExport, Nvfp4W4A4ConfigFollowsTheCompressedTensorsPreset) {
    test::QuantizedTiny m = quantize_tiny(shared(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})")));
    const Exported e = export_ct(m, "ctexp");
    const json& qc = e.config["quantization_config"];
    EXPECT_EQ(qc["quant_method"], "compressed-tensors");
    EXPECT_EQ(qc["format"], "nvfp4-pack-quantized");
    EXPECT_EQ(qc["quantization_status"], "compressed");
    EXPECT_EQ(qc["ignore"], json::array({"lm_head"}));
    EXPECT_TRUE(qc["kv_cache_scheme"].is_null());
    ASSERT_EQ(qc["config_groups"].size(), 1u);
    const json& g = qc["config_groups"]["group_0"];
    EXPECT_EQ(g["targets"].size(), 14u);  // 2 layers x 7 Linear
    EXPECT_EQ(g["weights"], json::parse(R"({"num_bits": 4, "type": "float", "symmetric": true, "group_size": 16,
        "strategy": "tensor_group", "dynamic": false, "scale_dtype": "torch.float8_e4m3fn"})"));
    EXPECT_EQ(g["input_activations"], json::parse(R"({"num_bits": 4, "type": "float", "symmetric": true, "group_size": 16,
        "strategy": "tensor_group", "dynamic": "local", "scale_dtype": "torch.float8_e4m3fn", "observer": "static_minmax"})"));
    EXPECT_FALSE(qc.contains("producer"));  // compressed-tensors forbids unknown keys
    // Tensors, and the global scales shared by the fused groups.
    const std::string p = "model.layers.0.self_attn.";
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
        EXPECT_FALSE(e.ckpt.contains(p + proj + ".weight"));
        EXPECT_EQ(e.ckpt.info(p + proj + ".weight_packed").dtype, SafetensorsDtype::U8);
        EXPECT_EQ(e.ckpt.info(p + proj + ".input_global_scale").shape, std::vector<int64_t>{1});
    }
    auto scalar = [&](const std::string& n) {
        float v;
        std::memcpy(&v, e.ckpt.bytes(n).data, 4);
        return v;
    };
    EXPECT_EQ(scalar(p + "q_proj.weight_global_scale"), scalar(p + "k_proj.weight_global_scale"));
    EXPECT_EQ(scalar(p + "q_proj.weight_global_scale"), scalar(p + "v_proj.weight_global_scale"));
    EXPECT_EQ(scalar(p + "q_proj.input_global_scale"), scalar(p + "v_proj.input_global_scale"));
    EXPECT_EQ(scalar("model.layers.1.mlp.gate_proj.weight_global_scale"), scalar("model.layers.1.mlp.up_proj.weight_global_scale"));
    EXPECT_NE(scalar("model.layers.1.mlp.down_proj.weight_global_scale"), scalar("model.layers.1.mlp.up_proj.weight_global_scale"));
    EXPECT_TRUE(e.ckpt.contains("lm_head.weight") || e.ckpt.contains("model.embed_tokens.weight"));
    // The manifest: one digest per layer and QuantLab's g.
    ASSERT_EQ(e.manifest.layers.size(), 14u);
    const ManifestLayer& q = e.manifest.layers.at(p + "q_proj");
    ASSERT_TRUE(q.nvfp4_global_scale);
    EXPECT_EQ(1.0f / *q.nvfp4_global_scale, scalar(p + "q_proj.weight_global_scale"));
    EXPECT_EQ(e.manifest.fused_scale_groups.size(), 4u);  // q/k/v and gate/up of two blocks
    EXPECT_TRUE(fs::exists(e.dir + "/ct/generation_config.json"));
    fs::remove_all(e.dir);
}

TEST(CompressedTensorsExport, MixedRecipesWriteOneConfigGroupPerScheme) {
    const std::string r = R"({"algorithm": "max", "calibration": {"samples": 8}, "quant_cfg": [
        {"quantizer_name": "*mlp*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
        {"quantizer_name": "*self_attn*weight_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "*self_attn*input_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "*o_proj*", "enable": false}]})";
    test::QuantizedTiny m = quantize_tiny(r);
    const Exported e = export_ct(m, "ctexp");
    const json& qc = e.config["quantization_config"];
    EXPECT_EQ(qc["format"], "mixed-precision");
    ASSERT_EQ(qc["config_groups"].size(), 2u);
    const json& attn = qc["config_groups"]["group_0"];
    const json& mlp = qc["config_groups"]["group_1"];
    EXPECT_EQ(attn["format"], "float-quantized");
    EXPECT_EQ(attn["targets"][0], "model.layers.0.self_attn.q_proj");
    EXPECT_EQ(attn["input_activations"]["observer"], "static_minmax");
    EXPECT_EQ(mlp["format"], "pack-quantized");
    EXPECT_EQ(mlp["targets"].size(), 6u);
    EXPECT_EQ(qc["ignore"], json::array({"lm_head", "model.layers.0.self_attn.o_proj", "model.layers.1.self_attn.o_proj"}));
    EXPECT_EQ(e.ckpt.info("model.layers.0.self_attn.q_proj.weight").dtype, SafetensorsDtype::F8_E4M3);
    EXPECT_EQ(e.ckpt.info("model.layers.0.self_attn.q_proj.input_scale").shape, std::vector<int64_t>{1});
    EXPECT_EQ(e.ckpt.info("model.layers.0.self_attn.o_proj.weight").dtype, SafetensorsDtype::F32);
    EXPECT_EQ(e.ckpt.info("model.layers.0.mlp.down_proj.weight_packed").dtype, SafetensorsDtype::I32);
    fs::remove_all(e.dir);
}

// A per-layer plan (as an experiment's mixed-precision search writes it: one entry per layer,
// the rest off) as config_groups, without calibrating, and back: every layer keeps its scheme,
// the layers left in BF16 are `ignore`, and the groups are those the checkpoint export writes.
TEST(CompressedTensorsExport, APlanSurvivesItsQuantizationConfigUnchanged) {
    const std::string plan = R"({"name": "MIXED_6B_NVFP4+FP8+BF16", "algorithm": "max", "quant_cfg": [
        {"quantizer_name": "*", "enable": false},
        {"quantizer_name": "model.layers.0.self_attn.q_proj.weight_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "model.layers.0.self_attn.q_proj.input_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "model.layers.0.mlp.down_proj.weight_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "model.layers.0.mlp.down_proj.input_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "model.layers.1.mlp.up_proj.weight_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "model.layers.1.mlp.up_proj.input_quantizer", "cfg": {"format": "nvfp4"}}]})";
    OpenedModel opened = open_model(test::tiny_llama());
    QuantizedModel q(*opened.model, parse_recipe(plan, "plan"));
    q.set_enabled(true);
    const json qc = ct_plan_quantization_config(q);
    EXPECT_EQ(qc["format"], "mixed-precision");
    ASSERT_EQ(qc["config_groups"].size(), 2u);  // NVFP4 W4A4 (two layers), FP8 W8A8
    const std::map<std::string, CtScheme> back = ct_layer_schemes(qc, "plan");
    std::vector<std::string> off;
    for (const auto& lp : q.layers()) {
        if (!lp->weight_enabled()) {
            off.push_back(lp->name());
            EXPECT_EQ(back.count(lp->name()), 0u) << lp->name();
            continue;
        }
        ASSERT_EQ(back.count(lp->name()), 1u) << lp->name();
        EXPECT_TRUE(back.at(lp->name()) == ct_scheme_of(*lp)) << lp->name() << ": " << back.at(lp->name()).key();
    }
    EXPECT_EQ(back.size(), 3u);
    EXPECT_EQ(back.at("model.layers.0.self_attn.q_proj").format, "nvfp4-pack-quantized");
    EXPECT_EQ(back.at("model.layers.0.mlp.down_proj").format, "float-quantized");
    std::sort(off.begin(), off.end());
    EXPECT_EQ(qc["ignore"].get<std::vector<std::string>>(), off);
    EXPECT_NE(user_error_text([&] { ct_layer_schemes(json::object(), "x.json"); }).find("x.json: no config_groups"), std::string::npos);
}

TEST(CompressedTensorsExport, KvCacheScalesAreWrittenPerAttentionWithTheScheme) {
    const std::string r = R"({"algorithm": "max", "calibration": {"samples": 8}, "kv_cache": {"format": "fp8_e4m3"}, "quant_cfg": [
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "*input_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "*lm_head*", "enable": false}]})";
    test::QuantizedTiny m = quantize_tiny(r);
    // kv_cache_scales() derives the scales from the KV-cache quantizers: a value, kept here.
    const std::optional<KvCacheScales> kv = m.q->kv_cache_scales();
    ASSERT_TRUE(kv);
    ASSERT_EQ(kv->layers.size(), 2u);
    const KvLayerScales& k0 = kv->layers[0];
    EXPECT_EQ(k0.attention, "model.layers.0.self_attn");
    EXPECT_GT(k0.k_amax, 0.0f);
    EXPECT_GT(k0.v_amax, 0.0f);
    const Exported e = export_ct(m, "ctexp");
    EXPECT_EQ(e.config["quantization_config"]["kv_cache_scheme"],
              json::parse(R"({"num_bits": 8, "type": "float", "symmetric": true, "strategy": "tensor", "group_size": null, "dynamic": false})"));
    float ks;
    std::memcpy(&ks, e.ckpt.bytes("model.layers.0.self_attn.k_scale").data, 4);
    EXPECT_EQ(ks, k0.k_amax / 448.0f);
    EXPECT_EQ(e.ckpt.info("model.layers.1.self_attn.v_scale").shape, std::vector<int64_t>{1});
    // The same scales in Model Optimizer's names, and back: QuantLab checkpoints and hf-modelopt
    // folders keep the amax exactly.
    NullJobSink sink;
    CancellationToken cancel;
    export_hf_modelopt(*m.q, test::tiny_llama(), e.dir + "/hf", false, sink, cancel);
    const json hq = json::parse(read_whole_file(e.dir + "/hf/hf_quant_config.json", "t"));
    EXPECT_EQ(hq["quantization"]["kv_cache_quant_algo"], "FP8");
    const json hc = json::parse(read_whole_file(e.dir + "/hf/config.json", "t"));
    EXPECT_EQ(hc["quantization_config"]["kv_cache_scheme"], json::parse(R"({"dynamic": false, "num_bits": 8, "type": "float"})"));
    const SafetensorsCheckpoint hf = SafetensorsCheckpoint::open(e.dir + "/hf");
    EXPECT_EQ(hf.info("model.layers.0.self_attn.k_proj.k_scale").shape, std::vector<int64_t>{});
    std::memcpy(&ks, hf.bytes("model.layers.0.self_attn.k_proj.k_scale").data, 4);
    EXPECT_EQ(ks, k0.k_amax / 448.0f);
    const OpenedModel back = open_model(e.dir + "/hf");
    ASSERT_TRUE(back.quantization->kv_cache_scales());
    EXPECT_EQ(back.quantization->kv_cache_scales()->layers[1].v_amax / 448.0f, m.q->kv_cache_scales()->layers[1].v_amax / 448.0f);
    save_quantized_checkpoint(*m.q, test::tiny_llama(), e.dir + "/ckpt", false);
    const OpenedModel ckpt = open_model(e.dir + "/ckpt");
    ASSERT_TRUE(ckpt.quantization->kv_cache_scales());
    EXPECT_EQ(ckpt.quantization->kv_cache_scales()->layers[1].v_amax, m.q->kv_cache_scales()->layers[1].v_amax);
    EXPECT_EQ(ckpt.quantization->kv_cache_scales()->format, "fp8_e4m3");
    fs::remove_all(e.dir);
    // NVFP4 KV caches have no compressed-tensors scheme vLLM loads: refused before writing.
    std::string nv = r;
    nv.replace(nv.find("\"fp8_e4m3\"}, \"quant_cfg\""), 10, "\"nvfp4\"");
    test::QuantizedTiny m2 = quantize_tiny(nv);
    const std::string dir = test::temp_dir("ctexp");
    const std::string err = user_error_text([&] { export_compressed_tensors(*m2.q, test::tiny_llama(), dir + "/ct", false, sink, cancel); });
    EXPECT_NE(err.find("a nvfp4 KV cache has no compressed-tensors kv_cache_scheme"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir + "/ct"));
    EXPECT_FALSE(fs::exists(dir + "/ct.partial"));
    fs::remove_all(dir);
}

TEST(CompressedTensorsExport, FoldedAwqAndSmoothQuantLeaveNoPreQuantScaleAndExport) {
    for (const std::string& r : {recipe_with(R"({"method": "awq", "fold": true})", R"({"format": "int4", "granularity": "group", "group_size": 32})"),
                                 recipe_with(R"({"method": "smoothquant", "alpha": 0.5, "fold": true})",
                                        R"({"format": "int8", "granularity": "channel", "axis": 0})", R"({"format": "int8"})")}) {
        test::QuantizedTiny m = quantize_tiny(r);
        for (const auto& l : m.q->layers()) EXPECT_FALSE(l->pre_quant_scale().defined()) << l->name();
        const Exported e = export_ct(m, "ctexp");
        EXPECT_EQ(e.manifest.layers.size(), 14u);
        fs::remove_all(e.dir);
    }
    // AWQ's folded scales keep the FP function: the norms took 1 / s.
    test::QuantizedTiny m = quantize_tiny(recipe_with(R"({"method": "awq", "fold": true})", R"({"format": "int4", "granularity": "group", "group_size": 32})"));
    OpenedModel fp = open_model(test::tiny_llama());
    m.q->set_enabled(false);
    const Dataset d = test::tokens_for(fp, 2, 3);
    const at::Tensor a = test::logits(*fp.model, d), b = test::logits(*m.opened.model, d);
    EXPECT_LT((a - b).abs().max().item<float>(), 1e-4f * a.abs().max().item<float>());
}

TEST(CompressedTensorsExport, AwqWithPreQuantScalesIsRefusedBeforeAnythingIsWritten) {
    test::QuantizedTiny m = quantize_tiny(recipe("awq", R"({"format": "int4", "granularity": "group", "group_size": 32})"));
    const std::string dir = test::temp_dir("ctexp");
    NullJobSink sink;
    CancellationToken cancel;
    const std::string e = user_error_text([&] { export_compressed_tensors(*m.q, test::tiny_llama(), dir + "/ct", false, sink, cancel); });
    EXPECT_NE(e.find("pre_quant_scale"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(dir + "/ct"));
    EXPECT_FALSE(fs::exists(dir + "/ct.partial"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
