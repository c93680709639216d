// SPDX-License-Identifier: GPL-3.0-or-later
// Tokenizers from Hugging Face tokenizer.json files: byte-level BPE (GPT-2, Llama 3, Qwen2,
// SmolLM), BPE with byte fallback (Llama 2, TinyLlama), WordPiece (BERT), WordLevel. The
// pipeline is the one the file declares, as the reference `tokenizers` library runs it:
// added tokens split first, then normalizer, pre-tokenizer, model, post-processor; decoding
// runs the decoder. Ids match the reference exactly for the supported components (golden
// tests in tests/engine/tokenizer_golden_test.cpp).
//
// Plain C++ (no LibTorch): usable from app/ and ui/ as part of the engine facade.
// Thread-safety: a Tokenizer is immutable after loading except for an internal cache guarded
// by a mutex, so encode/decode may be called from several threads at once.
//
// Not applied: the file's "truncation" and "padding" sections (QuantLab cuts token streams
// into windows itself; encode_truncated cuts sentences to a length the caller gives), offsets, pair sequences, BPE dropout. Not supported (a UserError names
// the component): Unigram models, the Precompiled normalizer, UnicodeScripts / FixedLength
// pre-tokenizers, the CTC decoder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ql {

// Token ids with a conventional role, where the files define them: from tokenizer_config.json
// next to tokenizer.json when present, else from the post-processor (the special tokens put
// before / after a sequence), the model's unk_token, "padding", and well-known special names.
struct SpecialTokenIds {
    std::optional<int32_t> bos, eos, pad, unk, cls, sep, mask;
};

// What the file declares, for the GUI's model panel.
struct TokenizerDescription {
    std::string source;          // the file (or the name given to from_json)
    std::string model_type;      // "BPE", "WordPiece" or "WordLevel"
    std::string normalizer;      // e.g. "Sequence[Prepend, Replace]"; "none" when absent
    std::string pre_tokenizer;   // e.g. "Sequence[Split(...), ByteLevel(no regex)]"
    std::string post_processor;  // e.g. "TemplateProcessing"
    std::string decoder;         // e.g. "ByteLevel"
    bool byte_fallback = false;
    size_t model_vocab_size = 0;  // entries of the model's vocabulary
    size_t merges = 0;            // BPE merge rules
    size_t added_tokens = 0;      // entries of "added_tokens"
    size_t special_tokens = 0;    // of which special
};

class Tokenizer {
public:
    // Reads and validates a tokenizer.json; throws ql::UserError naming the file and the field
    // or component on any problem (not JSON, missing model, unknown component type, merges
    // referencing unknown tokens, a bad regex ...). A tokenizer_config.json in the same folder
    // is read for the special token roles only.
    static Tokenizer from_file(const std::string& path);
    // The same from the text of a tokenizer.json; `name` stands for the file in messages.
    static Tokenizer from_json(const std::string& json_text, const std::string& name = "tokenizer.json");

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    // Token ids of `text` (UTF-8; ill-formed sequences are replaced by U+FFFD first, as Python's
    // decode(errors="replace") would). add_special_tokens applies the post-processor.
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
    // encode(text, true) cut to at most max_length ids as the reference's truncation (strategy
    // longest_first, direction right) cuts a single sequence: the text's tokens are cut to
    // max_length minus the post-processor's special tokens, which are all kept (0 = no limit).
    // This is what sentence-transformers' tokenize(..., truncation=True, max_length) does.
    std::vector<int32_t> encode_truncated(std::string_view text, size_t max_length) const;
    // Text of `ids`; ids outside the vocabulary are skipped (as the reference does).
    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

    // One more than the largest id of the model vocabulary and the added tokens: the number of
    // rows a model's embedding needs.
    size_t vocab_size() const;
    std::optional<int32_t> token_to_id(std::string_view token) const;
    std::optional<std::string> id_to_token(int32_t id) const;
    bool is_special(int32_t id) const;
    const SpecialTokenIds& special_ids() const;
    const TokenizerDescription& description() const;

    struct Impl;  // opaque: defined in tokenizer.cpp

private:
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace ql
