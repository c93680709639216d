// SPDX-License-Identifier: GPL-3.0-or-later
// A llama.cpp GGUF file (llama, qwen2, gpt2, bert) opened as a QuantLab model: the config from its
// metadata (gguf_model_config.h), the tokenizer from tokenizer.ggml.* (gguf_vocabulary.h), every
// tensor decoded to float32 under its HF name (the inverse of engine/export/gguf_names.h: Llama
// q/k rows un-permuted), with the file kept open so that each weight's own quantization (type,
// codes, block scales) stays available to the inspector and the statistics.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/export/gguf_names.h"
#include "engine/io/gguf_file.h"
#include "engine/loading/gguf_vocabulary.h"
#include "engine/models/model.h"

namespace ql {

// True when `path` is a regular file starting with the GGUF magic.
bool is_gguf_file(const std::string& path);

// One parameter as the file holds it.
struct GgufParameterSource {
    std::string parameter;   // HF name ("model.layers.0.self_attn.q_proj.weight")
    std::string layer;       // its quantizable layer ("model.layers.0.self_attn.q_proj"), "" for norms
    const GgufTensorInfo* tensor = nullptr;  // in `file` below
    GgufRowPermutation permutation = GgufRowPermutation::None;  // rows permuted in the file (Llama q/k)
};

// What the model was read from (kept with an opened model: OpenedModel::gguf).
struct GgufSource {
    std::shared_ptr<const GgufFile> file;
    std::vector<GgufParameterSource> parameters;  // the model's parameters, in named_parameters() order
    GgufVocabulary vocabulary;
    std::vector<std::string> warnings;
    bool tied_embeddings = false;                 // lm_head reads token_embd.weight

    // The source of layer `layer`'s weight (a tied lm_head: token_embd.weight's), or null.
    const GgufParameterSource* weight_of(const std::string& layer) const;
};

struct GgufModel {
    std::unique_ptr<Model> model;
    GgufSource source;
};

// Writes into `folder` (which must exist) the files a model folder of this GGUF model needs
// besides its weights: config.json (hf_config_json), tokenizer.json when the file's tokenizer
// could be rebuilt, quantlab.json for the demo's character vocabulary. What ptq and train copy
// into their checkpoints when MODEL is a GGUF file.
void write_gguf_model_files(const ModelConfig& config, const GgufSource& source, const std::string& folder);

// The vocabulary's text files as transformers reads them, into `folder` (which must exist):
// tokenizer.json, tokenizer_config.json (BOS / EOS strings, add_bos_token, model_max_length =
// max_positions), chat_template.jinja when the file has a template, generation_config.json (every
// end id). Returns the names written; none when the vocabulary has no tokenizer.json form.
std::vector<std::string> write_gguf_text_files(const GgufVocabulary& v, int64_t max_positions, const std::string& folder);

// Opens and decodes `path`. Every tensor of the file must be a parameter of the model its
// metadata describes with the matching shape, and every parameter must be in the file (a tied
// lm_head reads token_embd); values must be finite. UserError naming the file and the key or
// tensor otherwise, and for types without a decoder.
GgufModel load_gguf_model(const std::string& path);

}  // namespace ql
