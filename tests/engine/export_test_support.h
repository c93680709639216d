// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the engine tests that run tiny models: the golden tiny Llama (hidden 64, MLP 96,
// 2 layers) quantized with a recipe on a few random-token calibration sequences, random images
// for the small CNN, and temporary folders.
#pragma once

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <memory>
#include <string>

#include "engine/loading/model_source.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"
#include "tests/temp_folder.h"

namespace ql::test {

inline const std::string& tiny_llama() {
    static const std::string path = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";
    return path;
}

// `samples` random-token training sequences of `sequence_length` tokens for `m`.
inline Dataset tokens_for(const OpenedModel& m, int64_t samples, uint64_t seed, int64_t sequence_length = 16) {
    DataOptions o;
    o.split = DataSplit::Train;
    o.samples = samples;
    o.seed = seed;
    o.sequence_length = sequence_length;
    return load_dataset("synthetic:random-tokens", o, m.data);
}

// `count` uniform [0, 1) 28x28 one-channel images (from ATen's global generator), all of class 0:
// inputs for the small CNN (cnn_config()).
inline Dataset random_images(int64_t count) {
    Dataset images;
    images.kind = Dataset::Kind::Images;
    images.name = "random images";
    images.inputs = at::rand({count, 1, 28, 28}, at::TensorOptions().dtype(at::kFloat));
    images.targets = at::zeros({count}, at::kLong);
    return images;
}

struct QuantizedTiny {
    OpenedModel opened;
    std::unique_ptr<QuantizedModel> q;
};

inline QuantizedTiny quantize_tiny(const std::string& recipe_json, const std::string& folder = tiny_llama()) {
    QuantizedTiny t;
    t.opened = open_model(folder);
    t.q = std::make_unique<QuantizedModel>(*t.opened.model, parse_recipe(recipe_json, "test recipe"));
    NullJobSink sink;
    CancellationToken cancel;
    run_ptq_pipeline(*t.q, tokens_for(t.opened, 8, 0), PtqOptions{}, sink, cancel);
    return t;
}

inline std::string recipe(const std::string& method, const std::string& weight_cfg, const std::string& input_cfg = "") {
    std::string r = R"({"algorithm": ")" + method + R"(", "calibration": {"samples": 8}, "quant_cfg": [
        {"quantizer_name": "*weight_quantizer", "cfg": )" + weight_cfg + "}";
    if (!input_cfg.empty()) r += R"(, {"quantizer_name": "*input_quantizer", "cfg": )" + input_cfg + "}";
    return r + R"(, {"quantizer_name": "*lm_head*", "enable": false}]})";
}

inline at::Tensor logits(Model& m, const Dataset& d) {
    c10::InferenceMode inference;
    return m.forward(d.inputs);
}

}  // namespace ql::test
