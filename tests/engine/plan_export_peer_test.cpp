// SPDX-License-Identifier: GPL-3.0-or-later
// Plans exported with export_plan, applied by the peers themselves (the peers venv; a peer that
// cannot run fails the test):
// - "modelopt": a mixed-precision plan (NVFP4 + FP8 + MXFP4 / INT + BF16 layers) given to NVIDIA
//   Model Optimizer's mtq.quantize on the HF model (the real all-MiniLM-L6-v2 and the golden tiny
//   Llama) with a few calibration batches; every nn.Linear's weight / input quantizer must be
//   enabled or disabled with the num_bits, block_sizes and axis the plan says
//   (tests/peers/modelopt_plan_peer.py). The plan the peer compares with is QuantLab's own
//   resolution of the recipe (QuantizedModel), not the export.
// - "llama-tensor-types": llama.cpp's llama_model_quantize given the exported arguments
//   (tests/peers/llama_tensor_types_peer.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/api/export_api.h"
#include "engine/export/gguf_names.h"
#include "tests/engine/export_test_support.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql {
namespace {

using nlohmann::json;

json quantizer_json(const QuantizerSettings& s, const QuantSpec& spec) {
    static const char* granularities[] = {"tensor", "channel", "group", "block"};
    return {{"format", spec.info->name},
            {"granularity", granularities[static_cast<int>(spec.granularity)]},
            {"block", spec.block},
            {"axis", spec.axis},
            {"dynamic", s.dynamic}};
}

// Writes plan.json (the export) and expected.json (QuantLab's per-layer plan) into a new folder.
std::string write_case(const std::string& dir, const std::string& name, const std::string& model, const std::string& arch,
                       const std::string& recipe) {
    const std::string folder = dir + "/" + name;
    std::filesystem::create_directories(folder);
    std::ofstream(folder + "/plan.json") << export_plan(model, recipe, "modelopt").text;
    OpenedModel opened = open_model(model);
    QuantizedModel q(*opened.model, parse_recipe(recipe, name));
    json layers = json::object();
    for (const auto& lp : q.layers()) {
        const LayerQuantPlan& p = lp->plan();
        layers[lp->name()] = {{"weight", p.weight.enabled ? quantizer_json(p.weight, p.weight_spec) : json(nullptr)},
                              {"input", p.input.enabled ? quantizer_json(p.input, p.input_spec) : json(nullptr)}};
    }
    std::ofstream(folder + "/expected.json") << json({{"model", model}, {"arch", arch}, {"layers", layers}}).dump(2);
    return folder;
}

TEST(PlanExportPeer, ModelOptimizerQuantizesEveryLinearAsThePlanSays) {
    const std::string python = test::peers_python();
    const std::string minilm = test::minilm_dir();
    const std::string dir = test::temp_dir("plan-peer");
    // MiniLM: NVFP4 W4A4 attention projections, FP8 W8A8 intermediate, INT4 group 32 weight-only
    // MLP output, attention output in BF16 (the experiment's mixed-precision case).
    const std::string bert = write_case(dir, "minilm_mixed", minilm, "bert", R"({"algorithm": "max", "quant_cfg": [
        {"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*attention.self*weight_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "*attention.self*input_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "*intermediate.dense.weight_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "*intermediate.dense.input_quantizer", "cfg": {"format": "fp8_e4m3"}},
        {"quantizer_name": "*.output.dense.weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
        {"quantizer_name": "*attention.output.dense*", "enable": false}]})");
    // Tiny Llama: FP8 W8A8 attention, NVFP4 W4A4 gate / up, MXFP4 W4A4 down, INT8 per-channel
    // weight-only v_proj of layer 1, o_proj and lm_head in BF16.
    const std::string llama = write_case(dir, "llama_mixed", test::tiny_llama(), "llama", R"({"algorithm": "max", "quant_cfg": [
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
        {"quantizer_name": "*lm_head*", "enable": false}]})");
    test::expect_peer_passes(python, "modelopt_plan_peer.py", "'" + bert + "' '" + llama + "'", dir);
}

// llama.cpp's own quantizer (llama_model_quantize, what llama-quantize runs) given the exported
// arguments writes every planned tensor of QuantLab's F32 GGUF in the plan's type and every other
// tensor as it would without them (tests/peers/llama_tensor_types_peer.py).
TEST(PlanExportPeer, LlamaCppQuantizesEveryPlannedTensorToThePlansType) {
    const std::string python = test::peers_python();
    const std::string dir = test::temp_dir("plan-llama-peer");
    const std::string recipe = R"({"algorithm": "max", "quant_cfg": [
        {"quantizer_name": "*self_attn*weight_quantizer", "cfg": {"format": "gguf_q8_0"}},
        {"quantizer_name": "*mlp*weight_quantizer", "cfg": {"format": "gguf_q4_0"}},
        {"quantizer_name": "*down_proj*weight_quantizer", "cfg": {"format": "gguf_mxfp4"}},
        {"quantizer_name": "*layers.1.self_attn.o_proj*", "enable": false},
        {"quantizer_name": "*lm_head.weight_quantizer", "cfg": {"format": "gguf_q5_0"}}]})";
    std::ofstream(dir + "/plan.args") << export_plan(test::tiny_llama(), recipe, "llama-tensor-types").text;
    ExportRequest req;
    req.model = test::tiny_llama();
    req.as = "gguf";
    req.out = dir + "/model-f32.gguf";
    req.gguf_type = "f32";
    NullJobSink sink;
    CancellationToken cancel;
    run_export(req, sink, cancel);
    // QuantLab's plan, with the GGML type of each format written out here.
    OpenedModel opened = open_model(test::tiny_llama());
    QuantizedModel q(*opened.model, parse_recipe(recipe, "test"));
    const std::map<std::string, std::string> types = {
        {"gguf_q8_0", "Q8_0"}, {"gguf_q4_0", "Q4_0"}, {"gguf_mxfp4", "MXFP4"}, {"gguf_q5_0", "Q5_0"}};
    json tensors = json::object();
    for (const auto& lp : q.layers())
        tensors[gguf_tensor_name(opened.model->config(), lp->name() + ".weight")->name] =
            lp->weight_configured() ? types.at(lp->plan().weight.options.format) : std::string("F16");
    ASSERT_EQ(tensors.size(), 15u);
    std::ofstream(dir + "/expected.json") << json({{"tensors", tensors}}).dump(2);
    test::expect_peer_passes(python, "llama_tensor_types_peer.py", "'" + dir + "'", dir);
}

}  // namespace
}  // namespace ql
