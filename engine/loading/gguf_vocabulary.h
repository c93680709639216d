// SPDX-License-Identifier: GPL-3.0-or-later
// The tokenizer a GGUF file describes (tokenizer.ggml.*; key names gguf-py/gguf/constants.py
// Keys.Tokenizer), rebuilt as the tokenizer.json that transformers builds from the same keys
// (transformers/integrations/gguf/gguf_tokenizer_mapping.py, the peer tests/engine checks against):
//   model "gpt2" with merges   byte-level BPE (GPT2Tokenizer: ByteLevel pre-tokenizer and decoder)
//                              split as llama.cpp splits for tokenizer.ggml.pre (llama_pre_tokenizers.h:
//                              "smollm" digits apart, "llama-bpe" ..., "qwen2" ...) -- where transformers'
//                              converter differs (it drops smollm's digit split), llama.cpp is followed
//   model "llama"              sentencepiece BPE with byte fallback (LlamaTokenizer: Metaspace
//                              prepend "first" unless tokenizer.ggml.add_space_prefix is false, merges
//                              from the file or recovered from the scores as generate_merges does)
//   model "bert"               WordPiece (BertTokenizerFast: BertNormalizer, BertPreTokenizer, [CLS] A
//                              [SEP]) from conversion/bert.py's phantom-space tokens ("\u2581x" -> "x",
//                              others -> "##x", CONTROL tokens as they are)
//   tokens == QuantLab's demo vocabulary (model "gpt2", no merges)   the demo's character encoder
//   anything else (no merges, "<token_N>" placeholders, other models)  no text encoder: token-id
//                              data works, text data is refused (with a note in `warnings`)
// Tokens the file marks CONTROL become special added tokens, USER_DEFINED plain added tokens.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"

namespace ql {

struct GgufVocabulary {
    int64_t token_count = 0;           // tokenizer.ggml.tokens entries (0: no vocabulary)
    std::string model;                 // tokenizer.ggml.model ("gpt2", "llama", "" when absent)
    std::string pre;                   // tokenizer.ggml.pre ("" when absent)
    bool is_demo = false;              // QuantLab's synthetic character vocabulary
    std::optional<std::string> tokenizer_json;  // the rebuilt tokenizer.json (when text can be encoded)
    std::optional<int32_t> bos_id, eos_id;      // tokenizer.ggml.bos_token_id / eos_token_id
    std::optional<int32_t> eot_id, eom_id;      // end of turn / end of message (llama.cpp's end-of-generation ids)
    std::optional<std::string> chat_template;   // tokenizer.chat_template (Jinja source)
    bool add_bos = false;              // tokenizer.ggml.add_bos_token
    std::vector<std::string> warnings;
};

// UserError naming the file and key for malformed tokenizer metadata (wrong types, merges, or a
// special-token id (bos, eos, eot, eom, unknown, padding, separator, mask) outside the token list).
GgufVocabulary gguf_vocabulary(const GgufFile& file);

}  // namespace ql
