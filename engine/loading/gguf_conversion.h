// SPDX-License-Identifier: GPL-3.0-or-later
// A llama.cpp GGUF file as a Hugging Face model folder (`quantlab-cli convert`): what
// transformers' AutoModelForCausalLM / AutoTokenizer load without the GGUF path, with the
// tokenizer as llama.cpp tokenizes (transformers' own GGUF converter drops SmolLM's digit split,
// see gguf_vocabulary.h). The weights are the file's values decoded exactly to float32: for a
// quantized GGUF they already lie on its quantization grid (a Q4_1 file's weights re-quantize to
// Q4_1 with zero error), which SOURCE.md in the folder says.
#pragma once

#include <string>
#include <vector>

namespace ql {

struct GgufConversion {
    std::string folder;
    std::vector<std::string> files;     // written, in order
    std::vector<std::string> warnings;  // the vocabulary's (an unknown pre-tokenizer ...)
};

// Writes config.json, model.safetensors (float32), tokenizer.json, tokenizer_config.json,
// chat_template.jinja (when the file has a template), generation_config.json and SOURCE.md
// (the file, its general.* metadata and licence, and the grid note) into `out` through
// "<out>.partial" and a rename. An existing `out` is replaced only with `force`. UserError for
// files that do not open as a model (gguf_model.h) or a vocabulary without text.
GgufConversion convert_gguf_to_hf(const std::string& gguf_path, const std::string& out, bool force);

}  // namespace ql
