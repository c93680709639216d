// SPDX-License-Identifier: GPL-3.0-or-later
// Moving models between devices (--device): parameters keep their identity (tied weights, the
// tensors quantizers hold), quantizer state moves along, batches follow the model. The GPU
// tests skip where LibTorch sees no CUDA GPU; there they check the GPU against the CPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/api/include/torch/cuda.h>

#include "engine/data/dataset.h"
#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/models/model_device.h"
#include "engine/quant/layer_quantizer.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/quantized_model_device.h"
#include "engine/quant/recipe.h"

namespace ql {
namespace {

std::unique_ptr<Model> tied_demo() {
    ModelConfig c = demo_decoder_config();
    c.tie_embeddings = true;
    c.num_layers = 1;
    return create_model(c, 11);
}

const at::Tensor& weight_of(const Model& m, const std::string& layer) { return m.find_layer(layer)->weight; }

bool gpu_usable() {
    const CudaAvailability a = cuda_availability();
    return torch::cuda::is_available() && a.torch_has_cuda && a.quantlab_has_cuda && a.gpus > 0;
}

TEST(ModelDevice, AModelIsWhereItsParametersAre) {
    const auto m = tied_demo();
    EXPECT_TRUE(model_device(*m).is_cpu());
}

TEST(ModelDevice, MovingToTheCpuIsANoOp) {
    auto m = tied_demo();
    std::vector<std::pair<const void*, at::Tensor>> before;
    for (const auto& [name, t] : m->named_parameters()) before.emplace_back(t.data_ptr(), t.clone());
    move_model(*m, at::Device(at::kCPU));
    const auto after = m->named_parameters();
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
        EXPECT_EQ(after[i].second.data_ptr(), before[i].first) << after[i].first;  // not even copied
        EXPECT_TRUE(at::equal(after[i].second, before[i].second)) << after[i].first;
    }
    EXPECT_TRUE(weight_of(*m, "lm_head").is_same(weight_of(*m, "model.embed_tokens")));
}

TEST(ModelDevice, BatchesFollowTheModel) {
    const auto m = tied_demo();
    Dataset d;
    d.inputs = at::randint(0, 48, {2, 5}, at::kLong);
    d.targets = at::randint(0, 48, {2, 5}, at::kLong);
    const Dataset b = batch_on_model_device(*m, d);
    EXPECT_TRUE(b.inputs.is_same(d.inputs));  // already there: no copy
    EXPECT_TRUE(b.targets.is_same(d.targets));
    EXPECT_FALSE(b.attention_mask.defined());
    EXPECT_TRUE(on_model_device(*m, d.inputs).is_same(d.inputs));
}

TEST(ModelDevice, PinnedWeightsStayPinnedThroughAMove) {
    auto m = tied_demo();
    QuantizedModel q(*m, load_recipe("NVFP4_DEFAULT"));
    LayerQuantizer& l = *q.find("model.layers.0.mlp.down_proj");
    l.set_weight_enabled(true);
    const at::Tensor pinned = l.quantized_weight() * 0.5;  // a value no quantizer would compute
    l.pin_quantized_weight(pinned);
    move_quantized_model(q, at::Device(at::kCPU));
    EXPECT_TRUE(l.weight_pinned());
    EXPECT_TRUE(at::equal(l.quantized_weight(), pinned));
}

TEST(ModelDeviceGpu, TiedWeightsStayTiedAndValuesRoundTripExactly) {
    if (!gpu_usable()) GTEST_SKIP() << "no CUDA GPU usable by this build";
    auto m = tied_demo();
    std::vector<at::Tensor> before;
    for (const auto& [name, t] : m->named_parameters()) before.push_back(t.clone());
    move_model(*m, torch_device("cuda"));
    EXPECT_TRUE(model_device(*m).is_cuda());
    EXPECT_TRUE(weight_of(*m, "lm_head").is_same(weight_of(*m, "model.embed_tokens")));
    EXPECT_TRUE(weight_of(*m, "lm_head").is_cuda());
    move_model(*m, at::Device(at::kCPU));
    const auto after = m->named_parameters();
    for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(at::equal(after[i].second, before[i])) << after[i].first;
    EXPECT_TRUE(weight_of(*m, "lm_head").is_same(weight_of(*m, "model.embed_tokens")));
}

TEST(ModelDeviceGpu, QuantizedWeightsOnTheGpuEqualTheCpusBitForBit) {
    if (!gpu_usable()) GTEST_SKIP() << "no CUDA GPU usable by this build";
    for (const std::string preset : {"NVFP4_DEFAULT", "MXFP4", "FP8_DEFAULT", "NF4"}) {
        auto m = tied_demo();
        QuantizedModel q(*m, load_recipe(preset));
        std::map<std::string, at::Tensor> cpu;
        for (const auto& l : q.layers())
            if (l->weight_configured()) {
                l->set_weight_enabled(true);
                cpu[l->name()] = l->quantized_weight().clone();
            }
        ASSERT_FALSE(cpu.empty()) << preset;
        move_quantized_model(q, torch_device("cuda"));
        for (const auto& l : q.layers())
            if (l->weight_configured()) {
                const at::Tensor g = l->quantized_weight();
                EXPECT_TRUE(g.is_cuda()) << preset << " " << l->name();
                EXPECT_TRUE(at::equal(g.cpu(), cpu.at(l->name()))) << preset << " " << l->name();
            }
    }
}

// The GGUF i-quants have CPU kernels only: a CUDA tensor makes a round trip through them and
// must come back with the CPU's values.
TEST(ModelDeviceGpu, GgufIQuantsOfGpuTensorsEqualTheCpusBitForBit) {
    if (!gpu_usable()) GTEST_SKIP() << "no CUDA GPU usable by this build";
    const at::Tensor x = at::randn({4, 512}, at::TensorOptions().dtype(at::kFloat)) * 0.02;
    for (const std::string format : {"gguf_iq2_xxs", "gguf_iq2_s", "gguf_iq3_xxs", "gguf_iq1_m", "gguf_tq1_0"}) {
        QuantOptions o;
        o.format = format;
        QuantSpec spec = resolve_spec(o, {4, 512});
        if (spec.info->requires_importance) set_importance(spec, std::vector<float>(512, 1.0f), {4, 512}, "uniform");
        const at::Tensor cpu = fake_quantize(x, spec);
        const at::Tensor gpu = fake_quantize(x.to(torch_device("cuda")), spec);
        EXPECT_TRUE(gpu.is_cuda()) << format;
        EXPECT_TRUE(at::equal(gpu.cpu(), cpu)) << format;
    }
}

TEST(ModelDeviceGpu, PinnedWeightsMoveToTheGpuAndStayPinned) {
    if (!gpu_usable()) GTEST_SKIP() << "no CUDA GPU usable by this build";
    auto m = tied_demo();
    QuantizedModel q(*m, load_recipe("NVFP4_DEFAULT"));
    LayerQuantizer& l = *q.find("model.layers.0.mlp.down_proj");
    l.set_weight_enabled(true);
    const at::Tensor pinned = l.quantized_weight() * 0.5;
    l.pin_quantized_weight(pinned);
    move_quantized_model(q, torch_device("cuda"));
    EXPECT_TRUE(l.weight_pinned());
    EXPECT_TRUE(l.quantized_weight().is_cuda());
    EXPECT_TRUE(at::equal(l.quantized_weight().cpu(), pinned));
}

TEST(ModelDeviceGpu, ForwardOnTheGpuAgreesWithTheCpu) {
    if (!gpu_usable()) GTEST_SKIP() << "no CUDA GPU usable by this build";
    auto m = tied_demo();
    const at::Tensor ids = at::randint(0, 48, {2, 12}, at::kLong);
    const at::Tensor cpu = m->forward(ids);
    move_model(*m, torch_device("cuda"));
    const at::Tensor gpu = m->forward(on_model_device(*m, ids));
    ASSERT_TRUE(gpu.is_cuda());
    // Matrix products differ in summation order across devices: close, not equal.
    EXPECT_TRUE(at::allclose(gpu.cpu(), cpu, 1e-4, 1e-4));
}

}  // namespace
}  // namespace ql
