// SPDX-License-Identifier: GPL-3.0-or-later
// What a model holds: the engine behind `quantlab-cli inspect` and the GUI's model panel.
// Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/model_config.h"

namespace ql {

struct ParameterSummary {
    std::string name;            // HF state-dict name
    std::vector<int64_t> shape;  // as the model uses it ([out, in] for Linear weights)
    std::string dtype;           // "float32" ...
    int64_t numel = 0;
};

struct LayerSummary {
    std::string name;            // HF module name ("model.layers.0.self_attn.q_proj")
    std::string kind;            // "linear", "conv2d", "embedding"
    std::vector<int64_t> weight_shape;
    bool has_bias = false;
    int64_t parameters = 0;      // weight (+ bias) elements
};

struct ModelSummary {
    std::string path;            // the folder ("demo" resolved)
    bool is_demo = false;
    ModelConfig config;
    int64_t parameter_count = 0; // tied weights once
    int64_t parameter_bytes = 0; // as held in memory
    std::vector<ParameterSummary> parameters;
    std::vector<LayerSummary> layers;  // quantizable layers, forward order
};

// MODEL: an HF folder or "demo". UserError for missing or bad files.
ModelSummary inspect_model(const std::string& model);

}  // namespace ql
