// SPDX-License-Identifier: GPL-3.0-or-later
// tokenizer.ggml.* metadata for a GGUF export (key names: ggml-org/llama.cpp
// gguf-py/gguf/constants.py Keys.Tokenizer; what llama.cpp requires: src/llama-vocab.cpp
// llama_vocab::impl::load). Sources, in order:
//   tokenizer.json      byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM) -> model "gpt2" with its
//                       merges and a pre-tokenizer name recognised from the file's split regex
//                       ("gpt-2", "llama-bpe", "qwen2", else "default" with a warning);
//                       BPE with byte_fallback (Llama 2, TinyLlama) -> model "llama" (SPM), scores
//                       -1000 as convert_hf_to_gguf's LlamaHfVocab writes them, <0xXX> tokens BYTE;
//                       WordPiece (BERT, MiniLM) -> model "bert" with conversion/bert.py's
//                       phantom-space tokens ("##x" -> "x", others "\u2581" + token, CONTROL as is),
//                       bos = [CLS], eos = sep = [SEP], normalizer.lowercase
//   quantlab.json       the demo's character vocabulary -> model "gpt2" without merges
//   neither             placeholder tokens "<token_N>" (model "gpt2", no merges, a warning):
//                       llama.cpp can load and run the model on token ids but not tokenize text
// Token types: special added tokens CONTROL, other added tokens USER_DEFINED, ids the tokenizer
// does not define (embedding rows beyond it) "[PADn]" UNUSED, as convert_hf_to_gguf pads them.
// Special ids (bos/eos/unk/pad/sep/cls/mask) from the tokenizer, else config.json's
// bos_token_id / eos_token_id / pad_token_id; add_bos_token / add_eos_token from what the
// tokenizer's post-processor adds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"

namespace ql {

struct GgufTokenizerMetadata {
    GgufMetadata metadata;
    std::vector<std::string> warnings;
    std::string source;  // "tokenizer.json", "quantlab.json" or "placeholder"
};

// `vocab_size`: rows of the model's token embedding (the token list is exactly that long).
// UserError naming the file when tokenizer.json is malformed or defines more tokens than that.
GgufTokenizerMetadata gguf_tokenizer_metadata(const std::string& model_folder, int64_t vocab_size);

// Token type codes of llama.cpp's llama_token_type (gguf-py TokenType).
enum class GgufTokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

}  // namespace ql
