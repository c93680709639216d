// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli export --as onnx (engine/export/onnx_export.h) and the Export Doctor on ONNX
// models. CliOnnxExport: the golden tiny Llama's INT8 SmoothQuant export (Q/DQ pairs, weight DQs,
// SmoothQuant's Mul) as the doctor and the file see it, the doctor's findings on damaged copies
// (a flipped weight code, truncated external data, a truncated model.onnx), and refusals that
// name what has no ONNX form. CliOnnxExportPeer: ONNX Runtime and the ONNX checker
// (tests/peers/onnx_runtime_peer.py) run the exports of the golden Llama-family models and of the
// real SmolLM2-135M-Instruct and all-MiniLM-L6-v2 in several formats, and their logits equal QuantLab's fake-quant
// logits: the distance is a small fraction of what quantization itself changes. Every model is
// quantized and exported once for the suite; the peers' Python runs once. The encoders (the
// golden BERT, the real all-MiniLM-L6-v2) are compared on their last hidden state.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/io/npy_file.h"
#include "engine/io/onnx_file.h"
#include "tests/app/cli_runner.h"
#include "tests/app/prepared_suite.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string model_dir(const std::string& name) { return std::string(QUANTLAB_TEST_DATA_DIR) + "/models/" + name; }

json doctor(const std::string& path) { return json::parse(run_cli({"doctor", path, "--json"}).out); }

bool has_finding(const json& report, const std::string& check, const std::string& text) {
    for (const json& f : report["findings"])
        if (f["check"] == check && f["problem"].get<std::string>().find(text) != std::string::npos) return true;
    return false;
}

TEST(CliOnnxExport, Int8SmoothQuantExportIsCheckedByTheDoctorAndDamageIsFound) {
    const std::string dir = make_temp_dir();
    run_cli_ok({"ptq", model_dir("llama"), "--recipe", "INT8_SMOOTHQUANT", "--calib", "synthetic:random-tokens", "--samples", "8", "--out",
            dir + "/q"});
    const json r = json::parse(run_cli_ok({"export", dir + "/q", "--as", "onnx", "--out", dir + "/onnx", "--json"}).out);
    EXPECT_EQ(r["as"], "onnx");
    EXPECT_EQ(r["doctor"]["layout"], "onnx");
    EXPECT_EQ(r["doctor"]["errors"], 0) << r["doctor"].dump(1);
    EXPECT_EQ(r["doctor"]["layers"], 14);  // 2 blocks x 7 Linear layers; lm_head stays float
    for (const json& c : r["doctor"]["checks"]) EXPECT_TRUE(c["ran"].get<bool>()) << c.dump();
    for (const char* f : {"model.onnx", "model.onnx.data", "quantlab_export.json", "config.json"}) EXPECT_TRUE(fs::exists(dir + "/onnx/" + f)) << f;

    // What the file holds: opset 23, one weight DQ per quantized Linear, a Q/DQ pair on every
    // Linear input (static INT8 per tensor), SmoothQuant's scales as Mul where no norm precedes.
    const OnnxModel m = read_onnx_file(dir + "/onnx/model.onnx");
    EXPECT_EQ(m.opset(), 23);
    EXPECT_EQ(m.ir_version, 11);
    std::map<std::string, int> ops;
    for (const OnnxNode& n : m.nodes) ++ops[n.op_type];
    EXPECT_EQ(ops["QuantizeLinear"], 14);
    EXPECT_EQ(ops["DequantizeLinear"], 28);
    EXPECT_EQ(ops["Attention"], 2);
    EXPECT_EQ(ops["RotaryEmbedding"], 4);
    EXPECT_EQ(ops["RMSNormalization"], 5);
    EXPECT_GE(ops["Mul"], 2 * 2);  // SiLU and the gate product in each block (+ SmoothQuant's Mul)
    const OnnxTensor* w = nullptr;
    for (const OnnxTensor& t : m.initializers)
        if (t.name == "model.layers.0.self_attn.q_proj.weight_quantized") w = &t;
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->type, static_cast<int32_t>(OnnxType::Int8));
    EXPECT_EQ(w->dims, (std::vector<int64_t>{64, 64}));  // [in, out]

    // The doctor finds a flipped weight code (in the external data), truncated data and a
    // truncated model.onnx, each naming what it found.
    fs::copy(dir + "/onnx", dir + "/flipped", fs::copy_options::recursive);
    {
        std::fstream f(dir + "/flipped/model.onnx.data", std::ios::in | std::ios::out | std::ios::binary);
        ASSERT_TRUE(w->external);
        f.seekg(w->offset + 5);
        char c = 0;
        f.read(&c, 1);
        c = static_cast<char>(c ^ 0x01);
        f.seekp(w->offset + 5);
        f.write(&c, 1);
    }
    const json flipped = doctor(dir + "/flipped");
    EXPECT_EQ(flipped["ok"], false);
    EXPECT_TRUE(has_finding(flipped, "reproduces-quantlab", "gives other values than the weight QuantLab evaluated")) << flipped.dump(1);

    fs::copy(dir + "/onnx", dir + "/short-data", fs::copy_options::recursive);
    fs::resize_file(dir + "/short-data/model.onnx.data", fs::file_size(dir + "/short-data/model.onnx.data") / 2);
    const json short_data = doctor(dir + "/short-data");
    EXPECT_EQ(short_data["ok"], false);
    EXPECT_TRUE(has_finding(short_data, "files", "lies past the end of model.onnx.data")) << short_data.dump(1);

    fs::copy(dir + "/onnx", dir + "/short-model", fs::copy_options::recursive);
    fs::resize_file(dir + "/short-model/model.onnx", fs::file_size(dir + "/short-model/model.onnx") / 2);
    const CliResult cut = run_cli({"doctor", dir + "/short-model", "--json"});
    EXPECT_EQ(cut.exit_code, 1);
    const json short_model = json::parse(cut.out);
    ASSERT_FALSE(short_model["findings"].empty());
    EXPECT_EQ(short_model["findings"][0]["check"], "files");
    EXPECT_NE(short_model["findings"][0]["problem"].get<std::string>().find("model.onnx"), std::string::npos) << short_model.dump(1);
    fs::remove_all(dir);
}

TEST(CliOnnxExport, WhatHasNoOnnxFormIsRefusedByName) {
    const std::string dir = make_temp_dir();
    run_cli_ok({"ptq", model_dir("llama"), "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--samples", "4", "--out",
            dir + "/nvfp4"});
    const CliResult nv = run_cli({"export", dir + "/nvfp4", "--as", "onnx", "--out", dir + "/o1"});
    EXPECT_EQ(nv.exit_code, 1);
    EXPECT_NE(nv.err.find("layer model.layers.0.self_attn.q_proj: nvfp4 weights has no ONNX QDQ form"), std::string::npos) << nv.err;
    EXPECT_FALSE(fs::exists(dir + "/o1"));
    EXPECT_FALSE(fs::exists(dir + "/o1.partial"));

    for (const auto& [model, why] : std::vector<std::pair<std::string, std::string>>{
             {"mistral_swa", "a sliding attention window of 4 tokens"}, {"qwen3", "with q_norm / k_norm (Qwen3)"}, {"gpt2", "gpt2 (the ONNX export writes Llama-family decoders"}}) {
        run_cli_ok({"ptq", model_dir(model), "--recipe", "FP8_DEFAULT", "--calib", "synthetic:random-tokens", "--samples", "4", "--out",
                dir + "/" + model});
        const CliResult e = run_cli({"export", dir + "/" + model, "--as", "onnx", "--out", dir + "/" + model + ".onnx"});
        EXPECT_EQ(e.exit_code, 1) << model;
        EXPECT_NE(e.err.find(why), std::string::npos) << model << ": " << e.err;
        EXPECT_FALSE(fs::exists(dir + "/" + model + ".onnx"));
    }
    fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------

class CliOnnxExportPeer : public PreparedSuite<CliOnnxExportPeer> {
    friend class PreparedSuite<CliOnnxExportPeer>;

private:
    struct Case {
        std::string name, model, recipe, kv_cache;
        double max_ratio;
        std::string ids;      // .npy token ids [B, T]
        std::string emulate;  // decoder | encoder: a chaotic case, checked against its chaos floor
    };

    static void write_recipe(const std::string& path, const json& weight, const json& input) {
        json r = {{"name", fs::path(path).stem().string()},
                  {"algorithm", "max"},
                  {"quant_cfg", json::array({{{"quantizer_name", "*"}, {"enable", false}},
                                             {{"quantizer_name", "*weight_quantizer"}, {"cfg", weight}},
                                             {{"quantizer_name", "*lm_head*"}, {"enable", false}}})}};
        if (!input.is_null()) r["quant_cfg"].insert(r["quant_cfg"].begin() + 2, json::object({{"quantizer_name", "*input_quantizer"}, {"cfg", input}}));
        std::ofstream(path) << r.dump(1);
    }

    static void prepare() {
        dir() = make_temp_dir();
        const std::string d = dir();
        write_recipe(d + "/int4_asym_g16_int8_dynamic.json", {{"format", "int4"}, {"granularity", "group"}, {"group_size", 16}, {"asymmetric", true}},
                     {{"format", "int8"}, {"dynamic", true}});
        // Groups of 128 on SmolLM2's 576 inputs: four groups and a short one of 64 (Model Optimizer
        // pads it; DequantizeLinear's blocked scales hold ceil(576 / 128) = 5 per column).
        write_recipe(d + "/int4_g128.json", {{"format", "int4"}, {"granularity", "group"}, {"group_size", 128}}, nullptr);
        write_recipe(d + "/int4_g32.json", {{"format", "int4"}, {"granularity", "group"}, {"group_size", 32}}, nullptr);
        write_recipe(d + "/fp8_channel_dynamic.json", {{"format", "fp8_e4m3"}, {"granularity", "channel"}, {"axis", 0}},
                     {{"format", "fp8_e4m3"}, {"dynamic", true}});
        // The golden tiny models: token ids at random, calibration on random tokens.
        std::mt19937 rng(7);
        NdArray tiny_ids = NdArray::zeros(DType::Int64, {2, 32});
        for (int64_t i = 0; i < tiny_ids.numel(); ++i) tiny_ids.as<int64_t>()[i] = static_cast<int64_t>(rng() % 96);  // the smallest vocabulary (llama3_gqa)
        write_npy(d + "/tiny_ids.npy", tiny_ids);
        NdArray bert_ids = NdArray::zeros(DType::Int64, {2, 16});  // the golden BERT: 120 tokens, 32 positions
        for (int64_t i = 0; i < bert_ids.numel(); ++i) bert_ids.as<int64_t>()[i] = static_cast<int64_t>(rng() % 120);
        write_npy(d + "/bert_ids.npy", bert_ids);
        // The real model: ids of real text, calibration on real text.
        const std::string gguf = peer_path("QUANTLAB_SMOLLM2_GGUF");
        if (!fs::is_regular_file(gguf)) throw std::runtime_error("the real model is missing: " + gguf + " (scripts/setup-peers)");
        const std::string corpus = d + "/corpus";
        if (std::system(("'" + std::string(QUANTLAB_SOURCE_DIR) + "/scripts/make-text-corpus' '" + corpus + "' >/dev/null").c_str()) != 0)
            throw std::runtime_error("scripts/make-text-corpus failed");
        const std::string train = slurp(corpus + "/train.txt");
        std::ofstream(d + "/calib.txt") << train.substr(0, train.find("\n\n", 8000)) << "\n";
        run_cli_ok({"convert", gguf, "--out", d + "/smollm2"});
        run_cli_ok({"tokenize", gguf, "--file", corpus + "/eval.txt", "--out", d + "/eval.ids.npy"});
        const NdArray all = read_npy(d + "/eval.ids.npy");
        // The real models with static INT8 inputs are chaotic: 1e-7 relative noise on every
        // Linear output changes MiniLM's last hidden state by ~17 % of what quantization changes
        // (a code rounds the other way and the change grows), so ONNX Runtime and QuantLab, whose
        // float kernels differ in the last bits, cannot agree element by element there. Those
        // cases are checked against their chaos floor (onnx_runtime_peer.py `emulation`); the
        // weight-only real case and the golden models are checked at 1e-3 of the effect.
        NdArray real_ids = NdArray::zeros(DType::Int64, {2, 64});
        std::copy_n(all.as<int64_t>(), real_ids.numel(), real_ids.as<int64_t>());
        write_npy(d + "/real_ids.npy", real_ids);
        const std::string minilm = minilm_dir();
        run_cli_ok({"tokenize", minilm, "--file", d + "/calib.txt", "--out", d + "/minilm.ids.npy"});
        const NdArray minilm_all = read_npy(d + "/minilm.ids.npy");
        NdArray minilm_ids = NdArray::zeros(DType::Int64, {2, 64});
        std::copy_n(minilm_all.as<int64_t>(), minilm_ids.numel(), minilm_ids.as<int64_t>());
        write_npy(d + "/minilm_ids.npy", minilm_ids);

        // max_ratio: rms(ORT - QuantLab) / rms(QuantLab - FP). Measured: 2e-6 .. 2e-4 (float
        // summation order), so 1e-3 keeps a margin and still fails any real difference in the
        // graph or the Q/DQ parameters (the -128 code without the Clip: 0.09). Static INT8 inputs
        // are the exception: there a last-bit difference can round one activation code the other
        // way, and which codes do depends on the CPU's float kernels (ONNX Runtime's MLAS picks
        // them per CPU): the golden Llama measured 3.7e-6 on an AMD Zen 5 and 4.9e-3 on an Intel
        // Xeon with AVX-512 (argmax agreeing everywhere). Those two cases allow 2e-2: a few flipped
        // codes, still well below the missing Clip's 0.09.
        constexpr double kStaticInt8Ratio = 2e-2;
        const std::string tiny = d + "/tiny_ids.npy", real = d + "/real_ids.npy";
        const std::vector<Case> cases = {
            {"tiny:llama INT8_SMOOTHQUANT", model_dir("llama"), "INT8_SMOOTHQUANT", "", kStaticInt8Ratio, tiny},
            {"tiny:llama3_gqa FP8_DEFAULT + FP8 KV cache", model_dir("llama3_gqa"), "FP8_DEFAULT", "fp8", 1e-3, tiny},
            {"tiny:qwen2 int4 asym g16 + int8 dynamic", model_dir("qwen2"), d + "/int4_asym_g16_int8_dynamic.json", "", 1e-3, tiny},
            {"tiny:llama int4 g32 weights", model_dir("llama"), d + "/int4_g32.json", "", 1e-3, tiny},
            {"tiny:llama3_gqa fp8 channel + fp8 dynamic", model_dir("llama3_gqa"), d + "/fp8_channel_dynamic.json", "", 1e-3, tiny},
            {"tiny:bert INT8_SMOOTHQUANT", model_dir("bert"), "INT8_SMOOTHQUANT", "", kStaticInt8Ratio, d + "/bert_ids.npy"},
            {"real:SmolLM2 INT8_SMOOTHQUANT", d + "/smollm2", "INT8_SMOOTHQUANT", "", 1e-3, real, "decoder"},
            {"real:SmolLM2 int4 g128 weights (short last group)", d + "/smollm2", d + "/int4_g128.json", "", 1e-3, real},
            {"real:all-MiniLM-L6-v2 INT8_SMOOTHQUANT", minilm, "INT8_SMOOTHQUANT", "", 1e-3, d + "/minilm_ids.npy", "encoder"},
        };
        json spec = json::array();
        std::map<std::string, std::string> fp_logits;  // source model -> its FP logits
        for (size_t i = 0; i < cases.size(); ++i) {
            const Case& c = cases[i];
            const bool real = c.name.rfind("real:", 0) == 0;
            const std::string q = d + "/q" + std::to_string(i), onnx = d + "/onnx" + std::to_string(i);
            std::vector<std::string> ptq = {"ptq", c.model, "--recipe", c.recipe, "--out", q};
            if (real) ptq.insert(ptq.end(), {"--calib", d + "/calib.txt", "--samples", "8", "--seq-len", "128"});
            else ptq.insert(ptq.end(), {"--calib", "synthetic:random-tokens", "--samples", "8"});
            if (!c.kv_cache.empty()) ptq.insert(ptq.end(), {"--kv-cache", c.kv_cache});
            run_cli_ok(ptq);
            const json ex = json::parse(run_cli_ok({"export", q, "--as", "onnx", "--out", onnx, "--json"}).out);
            if (ex["doctor"]["errors"] != 0) throw std::runtime_error(c.name + ": the doctor found errors: " + ex["doctor"].dump(1));
            std::string& fp = fp_logits[c.model];
            if (fp.empty()) {
                fp = d + "/fp" + std::to_string(i) + ".npy";
                run_cli_ok({"logits", c.model, "--ids", c.ids, "--out", fp});
            }
            run_cli_ok({"logits", q, "--ids", c.ids, "--out", d + "/ql" + std::to_string(i) + ".npy"});
            spec.push_back({{"name", c.name}, {"onnx", onnx}, {"ids", c.ids}, {"quantlab", d + "/ql" + std::to_string(i) + ".npy"},
                            {"fp", fp}, {"max_ratio", c.max_ratio}, {"min_top1", 0.98}});
            if (!c.emulate.empty()) {
                spec.back()["emulate"] = c.emulate;
                spec.back()["hf"] = c.model;
                spec.back()["floor_factor"] = 2.0;
                spec.back()["min_top1"] = 0.9;  // measured 0.96-0.98: the noise moves near-ties
            }
        }
        std::ofstream(d + "/cases.json") << spec.dump(1);
        const PeerOutput out = run_peer_script(peers_python(), "onnx_runtime_peer.py", "'" + d + "/cases.json' '" + d + "/results.json'", d);
        std::printf("%s", out.output.c_str());
        if (out.status != 0 && !fs::exists(d + "/results.json")) throw std::runtime_error("onnx_runtime_peer.py could not run:\n" + out.output);
        const json results = json::parse(slurp(d + "/results.json"));
        for (const json& c : results["checks"]) checks()[c["name"].get<std::string>()] = c;
    }
};

TEST_F(CliOnnxExportPeer, GoldenModelsRunInOnnxRuntimeWithQuantLabsLogits) { expect_checks("tiny:", 2 * 6, true); }

TEST_F(CliOnnxExportPeer, TheRealModelsRunInOnnxRuntimeWithQuantLabsOutputs) { expect_checks("real:", 2 * 3, true); }

}  // namespace
}  // namespace ql::test
