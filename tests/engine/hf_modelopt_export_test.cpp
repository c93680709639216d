// SPDX-License-Identifier: GPL-3.0-or-later
// The Model Optimizer HF export (engine/export/hf_modelopt_*): byte layouts for known inputs,
// bit-identical logits after export -> open_model for every supported format, the validator,
// refusals, and crash safety (existing output, unwritable folder, a full disk via RLIMIT_FSIZE).
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/export/export_validator.h"
#include "engine/export/hf_modelopt_checkpoint.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/export/hf_modelopt_layout.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/whole_file.h"
#include "engine/quant/quant_plan.h"
#include "export_test_support.h"
#include "kernels/nvfp4.h"
#include "user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::quantize_tiny;
using test::recipe;
using test::user_error_text;

const char* kQProj = "model.layers.0.self_attn.q_proj";

// One layer's quantizer on the tiny Llama with a weight we choose (no calibration needed for
// weight-only recipes).
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
        q = std::make_unique<QuantizedModel>(*opened.model, parse_recipe(R"({"quant_cfg": [{"quantizer_name": ")" +
                                                                             std::string(kQProj) + R"(.weight_quantizer", "cfg": )" +
                                                                             weight_cfg + "}]}", "one layer"));
        q->set_enabled(true);
        layer = q->find(kQProj);
    }
    std::vector<ExportTensor> pack() { return pack_hf_layer(*layer, hf_format_of(*layer)); }
};

const ExportTensor& tensor(const std::vector<ExportTensor>& ts, const std::string& suffix) {
    for (const auto& t : ts)
        if (t.name == std::string(kQProj) + "." + suffix) return t;
    throw std::runtime_error("no tensor " + suffix);
}

float scalar(const ExportTensor& t) {
    float v;
    std::memcpy(&v, t.bytes.data(), 4);
    return v;
}

TEST(HfModeloptLayout, Nvfp4PacksEvenElementsInTheLowNibbleWithE4M3BlockScales) {
    OneLayer one(R"({"format": "nvfp4"})", [](at::Tensor& w) {
        const float row[] = {1.0f, -0.5f, 2.0f, 3.0f, 4.0f, 6.0f};
        for (int i = 0; i < 6; ++i) w[0][i] = row[i];
    });
    const HfLayerFormat f = hf_format_of(*one.layer);
    EXPECT_EQ(f.quant_algo, "W4A16_NVFP4");
    const auto t = one.pack();
    const ExportTensor& w = tensor(t, "weight");
    EXPECT_EQ(w.dtype, SafetensorsDtype::U8);
    EXPECT_EQ(w.shape, (std::vector<int64_t>{64, 32}));
    // E2M1 codes: 1 -> 2, -0.5 -> 8|1, 2 -> 4, 3 -> 5, 4 -> 6, 6 -> 7; element 2k low nibble.
    EXPECT_EQ(w.bytes[0], 0x92);
    EXPECT_EQ(w.bytes[1], 0x54);
    EXPECT_EQ(w.bytes[2], 0x76);
    EXPECT_EQ(w.bytes[3], 0x00);
    const ExportTensor& s = tensor(t, "weight_scale");
    EXPECT_EQ(s.dtype, SafetensorsDtype::F8_E4M3);
    EXPECT_EQ(s.shape, (std::vector<int64_t>{64, 4}));
    EXPECT_EQ(s.bytes[0], 0x7E);  // block amax 6: 6 / (6 g) = 448 = E4M3 0x7E
    EXPECT_EQ(s.bytes[1], 0x38);  // an all-zero block gets scale 1.0 = E4M3 0x38
    const ExportTensor& g = tensor(t, "weight_scale_2");
    EXPECT_EQ(g.shape, std::vector<int64_t>{});
    EXPECT_EQ(scalar(g), kernels::nvfp4_global_scale(6.0f));
}

TEST(HfModeloptLayout, Fp8WeightBytesAreE4M3OfWeightOverScale) {
    OneLayer one(R"({"format": "fp8_e4m3"})", [](at::Tensor& w) {
        w[0][0] = 448.0f;
        w[0][1] = 1.0f;
        w[0][2] = -2.0f;
    });
    // Weight-only FP8 is not a Model Optimizer format: it needs static FP8 inputs.
    EXPECT_NE(user_error_text([&] { hf_format_of(*one.layer); }).find("supported: NVFP4"), std::string::npos);
    HfLayerFormat f = hf_format_named("FP8", 0, "test");
    f.input_quantized = false;  // pack the weight alone
    const auto t = pack_hf_layer(*one.layer, f);
    const ExportTensor& w = tensor(t, "weight");
    EXPECT_EQ(w.dtype, SafetensorsDtype::F8_E4M3);
    EXPECT_EQ(w.bytes[0], 0x7E);
    EXPECT_EQ(w.bytes[1], 0x38);
    EXPECT_EQ(w.bytes[2], 0xC0);
    EXPECT_EQ(scalar(tensor(t, "weight_scale")), 1.0f);
}

TEST(HfModeloptLayout, Int4AwqPacksTwosComplementNibblesAlongTheOutputDimension) {
    OneLayer one(R"({"format": "int4", "granularity": "group", "group_size": 32})", [](at::Tensor& w) {
        w[0][0] = 7.0f;
        w[1][0] = -7.0f;
        w[0][1] = -3.0f;
        w[1][1] = 1.0f;
    });
    const HfLayerFormat f = hf_format_of(*one.layer);
    EXPECT_EQ(f.quant_algo, "W4A16_AWQ");
    EXPECT_EQ(f.group_size, 32);
    const auto t = one.pack();
    const ExportTensor& w = tensor(t, "weight");
    EXPECT_EQ(w.shape, (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(w.bytes[0], 0x97);  // row 0: 7 low, row 1: -7 = 0x9 high
    EXPECT_EQ(w.bytes[1], 0x1D);  // -3 = 0xD low, 1 high
    const ExportTensor& s = tensor(t, "weight_scale");
    EXPECT_EQ(s.shape, (std::vector<int64_t>{64, 2}));
    EXPECT_EQ(reinterpret_cast<const float*>(s.bytes.data())[0], 1.0f);  // group amax 7 / 7
}

// q_proj has 64 inputs: groups of 48 leave a short last group of 16, which QuantLab quantizes as
// Model Optimizer does (zero padding) but which W4A16_AWQ's scale layout cannot hold; Model
// Optimizer's own export refuses it too ("partial blocks are not supported").
TEST(HfModeloptLayout, Int4AwqRefusesAShortLastGroupNamingTheLayer) {
    OneLayer one(R"({"format": "int4", "granularity": "group", "group_size": 48})", [](at::Tensor& w) { w[0][0] = 1.0f; });
    const std::string e = user_error_text([&] { hf_format_of(*one.layer); });
    EXPECT_NE(e.find(std::string("layer ") + kQProj + ": a W4A16_AWQ checkpoint has no short last group"), std::string::npos) << e;
    EXPECT_NE(e.find("in_features 64 is not a multiple of the group size 48"), std::string::npos) << e;
}

TEST(HfModeloptLayout, Mxfp4StoresE8M0ScaleBytes) {
    OneLayer one(R"({"format": "mxfp4"})", [](at::Tensor& w) {
        w[0][0] = 6.0f;
        w[0][1] = -1.0f;
    });
    HfLayerFormat f = hf_format_named("MXFP4", 32, "test");
    f.input_quantized = false;
    const auto t = pack_hf_layer(*one.layer, f);
    const ExportTensor& w = tensor(t, "weight");
    EXPECT_EQ(w.bytes[0], 0x7 | (0x8 | 0x2) << 4);
    const ExportTensor& s = tensor(t, "weight_scale");
    EXPECT_EQ(s.dtype, SafetensorsDtype::U8);
    EXPECT_EQ(s.shape, (std::vector<int64_t>{64, 2}));
    EXPECT_EQ(s.bytes[0], 127);  // floor(log2 6) - emax(E2M1) = 2 - 2 = 0 -> 127
}

TEST(HfModeloptLayout, PinnedWeightsOnTheGridAreStoredAndOffGridOnesAreRefused) {
    OneLayer one(R"({"format": "nvfp4"})", [](at::Tensor& w) {
        const float row[] = {1.0f, -0.5f, 2.0f, 3.0f, 4.0f, 6.0f};
        for (int i = 0; i < 6; ++i) w[0][i] = row[i];
    });
    // A pinned weight on the same scales but other grid points (as GPTQ leaves it): its own codes.
    at::Tensor q = one.layer->quantized_weight().clone();
    q[0][0] = -6.0f;
    q[0][2] = 4.0f;
    one.layer->pin_quantized_weight(q);
    const auto t = one.pack();
    EXPECT_EQ(tensor(t, "weight").bytes[0], 0x9F);  // -6 -> 8|7 low, -0.5 -> 8|1 high
    EXPECT_EQ(tensor(t, "weight").bytes[1], 0x56);  // 4 -> 6 low, 3 -> 5 high (unchanged)
    // One value off the E2M1 grid of its block cannot be stored: the error names the element.
    q[63][31] = 0.3f;
    one.layer->pin_quantized_weight(q);
    const std::string e = user_error_text([&] { one.pack(); });
    EXPECT_NE(e.find(std::string("layer ") + kQProj + ": the W4A16_NVFP4 codes do not reproduce the quantized weight at element " +
                     std::to_string(63 * 64 + 31)),
              std::string::npos)
        << e;
}

TEST(HfModeloptLayout, InputAmaxReproducesTheStoredInputScaleExactly) {
    for (const char* algo : {"NVFP4", "FP8"}) {
        const HfLayerFormat f = hf_format_named(algo, 0, "test");
        uint32_t bits = 0x3A000000u;  // walk many magnitudes and mantissas
        for (int i = 0; i < 20000; ++i, bits += 0x0001F3A7u) {
            float amax;
            std::memcpy(&amax, &bits, 4);
            if (!std::isfinite(amax) || amax > 1e30f) break;
            const float s = input_scale_for_amax(f, amax);
            EXPECT_EQ(input_scale_for_amax(f, input_amax_for_scale(f, s, "test")), s) << algo << " " << amax;
        }
    }
}

// Export -> open_model gives the same logits, bit for bit, for each supported format.
void expect_round_trip(const std::string& recipe_json, const std::string& expected_algo) {
    test::QuantizedTiny m = quantize_tiny(recipe_json);
    const std::string dir = test::temp_dir("hfexp");
    NullJobSink sink;
    CancellationToken cancel;
    const FolderExportResult r = export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/out", false, sink, cancel);
    EXPECT_GT(r.bytes, 0);
    ASSERT_TRUE(is_hf_modelopt_checkpoint(dir + "/out"));
    const auto qc = nlohmann::json::parse(read_whole_file(dir + "/out/hf_quant_config.json", "t"));
    EXPECT_EQ(qc["quantization"]["quant_algo"], expected_algo);
    EXPECT_EQ(qc["producer"]["name"], "quantlab");
    const auto config = nlohmann::json::parse(read_whole_file(dir + "/out/config.json", "t"));
    EXPECT_EQ(config["quantization_config"]["quant_method"], "modelopt");
    EXPECT_EQ(config["quantization_config"]["quant_algo"], expected_algo);
    EXPECT_TRUE(fs::exists(dir + "/out/generation_config.json"));
    EXPECT_FALSE(fs::exists(dir + "/out.partial"));

    OpenedModel back = open_model(dir + "/out");
    ASSERT_TRUE(back.quantization);
    const Dataset eval = test::tokens_for(m.opened, 4, 9);
    const at::Tensor a = test::logits(*m.opened.model, eval), b = test::logits(*back.model, eval);
    EXPECT_TRUE(at::equal(a, b)) << expected_algo << " max diff " << (a - b).abs().max().item<float>();
    fs::remove_all(dir);
}

TEST(HfModeloptExport, Nvfp4W4A4RoundTripsBitExactly) {
    expect_round_trip(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"), "NVFP4");
}

TEST(HfModeloptExport, Fp8RoundTripsBitExactly) {
    expect_round_trip(recipe("max", R"({"format": "fp8_e4m3"})", R"({"format": "fp8_e4m3"})"), "FP8");
}

TEST(HfModeloptExport, Int4AwqWithPreQuantScalesRoundTripsBitExactly) {
    expect_round_trip(recipe("awq", R"({"format": "int4", "granularity": "group", "group_size": 32})"), "W4A16_AWQ");
}

TEST(HfModeloptExport, Int4GptqPinnedWeightsRoundTripBitExactly) {
    expect_round_trip(recipe("gptq", R"({"format": "int4", "granularity": "group", "group_size": 32})"), "W4A16_AWQ");
}

TEST(HfModeloptExport, Nvfp4GptqPinnedWeightsRoundTripBitExactly) {
    expect_round_trip(recipe("gptq", R"({"format": "nvfp4"})"), "W4A16_NVFP4");
}

TEST(HfModeloptExport, Mxfp4RoundTripsBitExactly) {
    expect_round_trip(recipe("max", R"({"format": "mxfp4"})", R"({"format": "mxfp4", "dynamic": true})"), "MXFP4");
}

TEST(HfModeloptExport, MixedRecipesWriteMixedPrecisionWithQuantizedLayers) {
    const std::string r = R"({"algorithm": "max", "calibration": {"samples": 8}, "quant_cfg": [
        {"quantizer_name": "*mlp*weight_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "*mlp*input_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "*self_attn*weight_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "*self_attn*input_quantizer", "cfg": {"format": "fp8_e4m3"}}]})";
    expect_round_trip(r, "MIXED_PRECISION");
    test::QuantizedTiny m = quantize_tiny(r);
    std::vector<HfExportLayer> layers;
    for (const auto& l : m.q->layers())
        if (l->weight_enabled()) layers.push_back({l->name(), hf_format_of(*l), 0, 0});
    const auto qc = nlohmann::json::parse(hf_quant_config_json(layers, {"lm_head"}));
    EXPECT_EQ(qc["quantization"]["quantized_layers"]["model.layers.0.mlp.up_proj"]["quant_algo"], "NVFP4");
    EXPECT_EQ(qc["quantization"]["quantized_layers"]["model.layers.0.mlp.up_proj"]["group_size"], 16);
    EXPECT_EQ(qc["quantization"]["quantized_layers"]["model.layers.1.self_attn.o_proj"]["quant_algo"], "FP8");
}

TEST(HfModeloptExport, SingleFormatConfigListsExcludedModules) {
    test::QuantizedTiny m = quantize_tiny(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"));
    std::vector<HfExportLayer> layers;
    for (const auto& l : m.q->layers())
        if (l->weight_enabled()) layers.push_back({l->name(), hf_format_of(*l), 0, 0});
    const auto qc = nlohmann::json::parse(hf_quant_config_json(layers, {"lm_head"}));
    EXPECT_EQ(qc["quantization"]["group_size"], 16);
    EXPECT_EQ(qc["quantization"]["exclude_modules"], nlohmann::json::array({"lm_head"}));
    EXPECT_TRUE(qc["quantization"]["kv_cache_quant_algo"].is_null());
    const auto config = nlohmann::json::parse(
        hf_config_with_quantization(R"({"model_type": "llama"})", layers, {"lm_head"}, "config.json"));
    const auto& g = config["quantization_config"]["config_groups"]["group_0"];
    EXPECT_EQ(g["weights"]["num_bits"], 4);
    EXPECT_EQ(g["weights"]["type"], "float");
    EXPECT_EQ(g["input_activations"]["group_size"], 16);
    EXPECT_EQ(config["quantization_config"]["ignore"], nlohmann::json::array({"lm_head"}));
}

TEST(HfModeloptExport, UnrepresentableFormatsAreRefusedListingTheSupportedOnes) {
    for (const std::string w : {R"({"format": "nf4"})", R"({"format": "int8", "granularity": "channel"})",
                                R"({"format": "int4", "granularity": "group", "group_size": 32, "asymmetric": true})"}) {
        test::QuantizedTiny m = quantize_tiny(recipe("max", w));
        NullJobSink sink;
        CancellationToken cancel;
        const std::string dir = test::temp_dir("hfexp");
        const std::string e = user_error_text([&] { export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/o", false, sink, cancel); });
        EXPECT_NE(e.find("has no Model Optimizer HF layout; supported: NVFP4"), std::string::npos) << e;
        EXPECT_FALSE(fs::exists(dir + "/o"));
        EXPECT_FALSE(fs::exists(dir + "/o.partial"));
        fs::remove_all(dir);
    }
}

TEST(ExportValidator, CatchesFloat8Fp4WeightsMissingKeysBadShapesAndNonFiniteScales) {
    const HfLayerFormat f = hf_format_named("NVFP4", 16, "t");
    const std::vector<HfExportLayer> layers{{"l", f, 4, 32}};
    ExportTensor w{"l.weight", SafetensorsDtype::U8, {4, 16}, std::vector<uint8_t>(64)};
    ExportTensor s{"l.weight_scale", SafetensorsDtype::F8_E4M3, {4, 2}, std::vector<uint8_t>(8, 0x38)};
    float one = 1.0f, nan = std::nanf("");
    ExportTensor g{"l.weight_scale_2", SafetensorsDtype::F32, {}, std::vector<uint8_t>(4)};
    std::memcpy(g.bytes.data(), &one, 4);
    ExportTensor in = g;
    in.name = "l.input_scale";
    std::map<std::string, const ExportTensor*> ok{{w.name, &w}, {s.name, &s}, {g.name, &g}, {in.name, &in}};
    EXPECT_TRUE(find_hf_export_problems(layers, ok).empty());

    ExportTensor w8 = w;
    w8.dtype = SafetensorsDtype::F8_E4M3;
    w8.shape = {4, 32};
    auto bad = ok;
    bad[w.name] = &w8;
    auto p = find_hf_export_problems(layers, bad);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].find("l.weight: dtype F8_E4M3, expected U8 (FP4 weights are packed"), std::string::npos) << p[0];

    bad = ok;
    bad.erase(g.name);
    p = find_hf_export_problems(layers, bad);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].find("l.weight_scale_2: missing"), std::string::npos) << p[0];

    ExportTensor s_shape = s;
    s_shape.shape = {4, 1};
    bad = ok;
    bad[s.name] = &s_shape;
    p = find_hf_export_problems(layers, bad);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].find("l.weight_scale: shape [4, 1], expected [4, 2]"), std::string::npos) << p[0];

    ExportTensor in_nan = in;
    std::memcpy(in_nan.bytes.data(), &nan, 4);
    ExportTensor s_nan = s;
    s_nan.bytes[3] = 0x7F;
    bad = ok;
    bad[in.name] = &in_nan;
    bad[s.name] = &s_nan;
    p = find_hf_export_problems(layers, bad);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_NE(p[0].find("l.weight_scale: value 3 is the E4M3 NaN code"), std::string::npos) << p[0];
    EXPECT_NE(p[1].find("l.input_scale: value 0 is NaN"), std::string::npos) << p[1];
    EXPECT_NE(user_error_text([&] { validate_hf_export(layers, bad, "x"); }).find("x: 2 problems:"), std::string::npos);
}

TEST(HfModeloptExport, NeverOverwritesWithoutForce) {
    test::QuantizedTiny m = quantize_tiny(recipe("max", R"({"format": "nvfp4"})"));
    const std::string dir = test::temp_dir("hfexp");
    NullJobSink sink;
    CancellationToken cancel;
    export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/o", false, sink, cancel);
    const auto before = fs::last_write_time(dir + "/o/model.safetensors");
    EXPECT_NE(user_error_text([&] { export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/o", false, sink, cancel); })
                  .find("already exists (pass --force"),
              std::string::npos);
    EXPECT_EQ(fs::last_write_time(dir + "/o/model.safetensors"), before);
    export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/o", true, sink, cancel);
    EXPECT_TRUE(is_hf_modelopt_checkpoint(dir + "/o"));
    EXPECT_FALSE(fs::exists(dir + "/o.partial"));
    EXPECT_FALSE(fs::exists(dir + "/o.old"));
    fs::remove_all(dir);
}

TEST(HfModeloptExport, UnwritableFolderGivesAClearErrorAndNoFiles) {
    test::QuantizedTiny m = quantize_tiny(recipe("max", R"({"format": "nvfp4"})"));
    const std::string dir = test::temp_dir("hfexp");
    NullJobSink sink;
    CancellationToken cancel;
    // A parent that is a file: fails for every user, root included.
    std::ofstream(dir + "/file") << "x";
    std::string e = user_error_text([&] { export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/file/o", false, sink, cancel); });
    EXPECT_NE(e.find("cannot create " + dir + "/file/o.partial: Not a directory"), std::string::npos) << e;
    // A read-only folder (root ignores permissions, so only checked for other users).
    if (geteuid() != 0) {
        fs::create_directory(dir + "/ro");
        fs::permissions(dir + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
        e = user_error_text([&] { export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/ro/o", false, sink, cancel); });
        EXPECT_NE(e.find("Permission denied"), std::string::npos) << e;
        EXPECT_FALSE(fs::exists(dir + "/ro/o"));
        fs::permissions(dir + "/ro", fs::perms::owner_all);
    }
    fs::remove_all(dir);
}

TEST(HfModeloptExport, AFullDiskLeavesNoHalfWrittenExport) {
    test::QuantizedTiny m = quantize_tiny(recipe("max", R"({"format": "nvfp4"})"));
    const std::string dir = test::temp_dir("hfexp");
    NullJobSink sink;
    CancellationToken cancel;
    // RLIMIT_FSIZE with SIGXFSZ ignored: writes past the limit fail with EFBIG, as a full disk
    // fails with ENOSPC (both go through the same error path).
    struct rlimit old {};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 16 * 1024;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    const std::string e = user_error_text([&] { export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/o", false, sink, cancel); });
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    EXPECT_NE(e.find("model.safetensors: write failed: File too large"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(dir + "/o"));
    EXPECT_FALSE(fs::exists(dir + "/o.partial"));
    fs::remove_all(dir);
}

TEST(HfModeloptCheckpoint, BadConfigsAndDamagedTensorsAreReportedWithTheFile) {
    test::QuantizedTiny m = quantize_tiny(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"));
    const std::string dir = test::temp_dir("hfexp");
    NullJobSink sink;
    CancellationToken cancel;
    export_hf_modelopt(*m.q, test::tiny_llama(), dir + "/o", false, sink, cancel);
    const std::string qc = read_whole_file(dir + "/o/hf_quant_config.json", "t");
    std::ofstream(dir + "/o/hf_quant_config.json") << R"({"quantization": {"quant_algo": "NF4"}})";
    EXPECT_NE(user_error_text([&] { open_model(dir + "/o"); }).find("quant_algo 'NF4' is not one QuantLab reads"),
              std::string::npos);
    // Declaring lm_head quantized: its scale keys are missing.
    auto j = nlohmann::json::parse(qc);
    j["quantization"]["exclude_modules"] = nlohmann::json::array();
    std::ofstream(dir + "/o/hf_quant_config.json") << j.dump();
    const std::string e = user_error_text([&] { open_model(dir + "/o"); });
    EXPECT_NE(e.find("lm_head.weight: dtype F32, expected U8"), std::string::npos) << e;
    EXPECT_NE(e.find("lm_head.weight_scale: missing"), std::string::npos) << e;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
