// SPDX-License-Identifier: GPL-3.0-or-later
// What reading and writing text with a model needs besides its weights: its tokenizer (encode,
// decode, the text of one token), the special tokens, the ids that end a generation, and its
// chat template. Filled by open_model from the model's own files:
//   GGUF file   tokenizer.ggml.* (gguf_vocabulary.h), tokenizer.chat_template, add_bos_token,
//               eos / eot / eom ids
//   HF folder   tokenizer.json, tokenizer_config.json (bos_token, eos_token, chat_template as a
//               string or a list of {name, template}), chat_template.jinja (transformers >= 4.48
//               writes the template there), generation_config.json eos_token_id (int or list)
//   demo        the synthetic character vocabulary (synthetic_tasks.h), no chat template
// A model without any of these has no text (encode and decode are empty).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ql {

class Tokenizer;
struct GgufVocabulary;

struct ModelText {
    // Null for the demo's character vocabulary and for models without a tokenizer.
    std::shared_ptr<const Tokenizer> tokenizer;
    // Token ids of a prompt given as plain text, with the special tokens the model's tokenizer
    // puts around a sequence (HF post-processor; a GGUF's add_bos_token). Empty: no text.
    std::function<std::vector<int64_t>(const std::string& text)> encode_prompt;
    // Token ids of text rendered by the chat template (which writes its own special tokens).
    std::function<std::vector<int64_t>(const std::string& text)> encode_rendered;
    // Text of ids (special tokens included: a template's markers stay visible).
    std::function<std::string(const std::vector<int64_t>& ids)> decode;

    std::optional<int64_t> bos_id, eos_id;
    std::string bos_token, eos_token;     // their text, as chat templates read bos_token / eos_token
    std::vector<int64_t> end_ids;         // generation stops at any of these (eos, eot, ...)

    std::optional<std::string> chat_template;  // Jinja source
    std::string chat_template_origin;          // where it came from, for messages ("model.gguf: tokenizer.chat_template")

    bool has_text() const { return static_cast<bool>(decode); }
};

// The text setup of an HF model folder (tokenizer.json and the files above), for a model with
// `vocab_size` embeddings. UserError naming the file and field for malformed files or special
// ids outside the vocabulary. A folder without tokenizer.json gives an empty ModelText.
ModelText hf_folder_text(const std::string& folder, int64_t vocab_size);

// The text setup of a GGUF file's vocabulary (`path` names the file in messages); empty when the
// vocabulary cannot encode text (gguf_vocabulary.h says why in its warnings).
ModelText gguf_model_text(const GgufVocabulary& vocabulary, const std::string& path);

// The demo's character vocabulary.
ModelText demo_text();

}  // namespace ql
