// SPDX-License-Identifier: GPL-3.0-or-later
// What a model holds: the engine behind `quantlab-cli inspect` and the GUI's model panel.
// Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/nd_array.h"

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
    // How a quantized checkpoint (or a planned recipe, see plan_layer_formats) quantizes it:
    // describe() of the weight and input quantizers ("nvfp4", "int4 group 128", "off"), and the
    // weight's stored bits per element with its scales (16 when not quantized: BF16 storage).
    std::string weight_quantizer = "off", input_quantizer = "off";
    std::string weight_format;   // the format name, "" when the weight is not quantized
    // Why weight_format is not the recipe's: a GGUF block type whose blocks do not fit the rows
    // takes llama.cpp's fallback type ("llama.cpp's fallback for gguf_q6_k: rows of 576 are not
    // a multiple of 256"); "" otherwise.
    std::string weight_fallback;
    double weight_bits = 16;
};

// One tensor of a GGUF file, as the file holds it.
struct GgufTensorSummary {
    std::string name;            // llama.cpp name ("blk.0.attn_q.weight")
    std::string type;            // ggml type name ("Q4_K", "F32", ...)
    std::vector<int64_t> ne;     // ggml order: ne[0] is the row length
    uint64_t bytes = 0;          // data bytes
    double bits_per_weight = 0;  // bytes * 8 / elements (block scales included)
    std::string parameter;       // the HF parameter it becomes ("model.layers.0.self_attn.q_proj.weight")
};

struct GgufFileSummary {
    uint32_t version = 0;
    uint32_t alignment = 0;
    int64_t metadata_count = 0;
    std::string file_type;       // general.file_type as llama.cpp names it ("MOSTLY_Q4_K_M"), or ""
    std::string tokenizer;       // tokenizer.ggml.model + pre ("gpt2 / llama-bpe"), "" when absent
    std::vector<GgufTensorSummary> tensors;  // file order
    std::vector<std::string> warnings;       // e.g. text cannot be tokenized
};

struct ModelSummary {
    std::string path;            // the folder or .gguf file ("demo" resolved)
    bool is_demo = false;
    ModelConfig config;
    int64_t parameter_count = 0; // tied weights once
    int64_t parameter_bytes = 0; // as held in memory
    std::vector<ParameterSummary> parameters;
    std::vector<LayerSummary> layers;  // quantizable layers, forward order
    // A GGUF file: its tensors and their types; each layer's weight_format / weight_bits are the
    // file's own ("gguf_q4_k", 4.5), weight_quantizer says "<type> (from file)".
    bool is_gguf = false;
    GgufFileSummary gguf;
    // Text: whether the model generates (a decoder with a tokenizer) and has a chat template.
    bool generates_text = false;
    bool has_chat_template = false;
    std::string chat_template_origin;
};

// MODEL: an HF folder, a QuantLab quantized checkpoint (layers carry its quantizers), a GGUF file
// (layers carry the file's types) or "demo".
// UserError for missing or bad files.
ModelSummary inspect_model(const std::string& model);

// Row `row` (an output channel) of layer `layer`'s weight as its quantizers see it ([out, in·kh·kw],
// float32): the outlier view's "this channel's histogram". UserError for an unknown layer or a
// row out of range.
std::vector<float> layer_weight_row(const std::string& model, const std::string& layer, int64_t row);

// The layers of `summary` with the quantizers `recipe_json` (recipe JSON text, docs/RECIPES.md)
// would give them, checked against the model's shapes: a UserError naming `source` and the
// field or layer when the recipe does not fit. Loads the model (configuration and weights).
std::vector<LayerSummary> plan_layer_formats(const std::string& model, const std::string& recipe_json,
                                             const std::string& source);

// A recipe to check against a model: a preset name or recipe file (`name`, as load_recipe takes
// it), or inline recipe JSON (`json` set; `name` is then only its source in messages).
struct RecipeToCheck {
    std::string name;
    std::string json;
};

// For each recipe why it cannot be applied to `model`, "" where it can: plan_layer_formats'
// checks (patterns that match no layer, shapes a format cannot take, a KV cache or rotation the
// model lacks) with the model loaded once. UserError only when the model cannot be opened.
std::vector<std::string> recipe_misfits(const std::string& model, const std::vector<RecipeToCheck>& recipes);

// The devices engine jobs can run on here, for a device choice: "cpu", then "cuda:N" for each
// GPU that this build can use (a LibTorch with CUDA and QuantLab's CUDA kernels; docs/CLI.md
// "Devices"). Debian's CPU-only LibTorch gives {"cpu"}.
std::vector<std::string> available_compute_devices();

// `quantlab-cli convert`: a GGUF file written as a Hugging Face model folder
// (engine/loading/gguf_conversion.h). UserError for files that do not open as a model.
struct ConvertedFolder {
    std::string folder;
    std::vector<std::string> files, warnings;
};
ConvertedFolder convert_gguf_model(const std::string& gguf_path, const std::string& out, bool force);

// `quantlab-cli tokenize`: the token ids of `text` as the model's data path reads text (no special
// tokens added: add_special_tokens false) and each id's text. UserError when the model has no
// tokenizer.
struct TokenizedText {
    std::vector<int64_t> ids;
    std::vector<std::string> pieces;  // the decoded text of each id alone
};
TokenizedText tokenize_text(const std::string& model, const std::string& text);

// `quantlab-cli logits`: the model's float32 logits [B, T, vocab] for token ids [B, T] (Int64 or
// Int32), for comparison with other tools. UserError for ids outside the vocabulary.
NdArray model_logits(const std::string& model, const NdArray& ids, const std::string& device = "cpu");

}  // namespace ql
