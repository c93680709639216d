// SPDX-License-Identifier: GPL-3.0-or-later
// What a MODEL argument names (CLI, recipes, GUI): an HF model folder, or the word "demo" for the
// cached built-in demo model ($XDG_CACHE_HOME/quantlab/demo). Opens the model together with what
// data loading needs from it: its tokenizer for text data.
#pragma once

#include <memory>
#include <string>

#include "engine/data/dataset.h"
#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct OpenedModel {
    std::unique_ptr<Model> model;
    std::string path;       // the folder
    bool is_demo = false;   // the built-in demo (quantlab.json says so): character vocabulary
    DataContext data;       // vocabulary, positions, text encoder (demo: synthetic_vocab; else
                            // tokenizer.json when the folder has one); encoders: sentences
    int64_t mask_token_id = -1;  // encoders: the tokenizer's [MASK] (masked-LM evaluation), -1 = none
    // A QuantLab quantized checkpoint (quantized_checkpoint.h): its quantizers, installed into
    // `model` (declared after it, so destroyed first). Null for FP models.
    std::unique_ptr<QuantizedModel> quantization;
};

// "demo" -> the demo folder (a UserError telling to run `quantlab-cli demo` when it is not
// built yet); anything else is returned unchanged.
std::string resolve_model_path(const std::string& model);

// A quantized checkpoint opens as its quantized model (quantizers installed, state restored).
OpenedModel open_model(const std::string& model);

}  // namespace ql
