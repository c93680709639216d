// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's byte-level BPE pre-tokenizers by their GGUF name (tokenizer.ggml.pre): the regexes
// it splits text with, in order (each applied to the pieces the previous one left, matches and
// the text between them both kept: tokenizers' Split with behaviour "Isolated"), whether words
// found whole in the vocabulary skip the merges, and whether a BOS token is added by default
// (llama-vocab.cpp, llama_vocab::impl::load and llm_tokenizer_bpe, llama.cpp as vendored by
// llama-cpp-python 0.3.36). Only names whose splitting is plain regexes are listed; names with
// hand-written splitters (kimi-k2, afmoe), raw UTF-8 BPE (gemma4, sarvam-moe, whitespace) or
// zero-width patterns (superbpe) are not, and fall back with a warning.
#pragma once

#include <string>
#include <vector>

namespace ql {

struct LlamaPreTokenizer {
    std::string type;                  // llama.cpp's LLAMA_VOCAB_PRE_TYPE_* in lower case ("smollm")
    std::vector<std::string> regexes;  // applied in order, PCRE2 syntax (UTF, UCP)
    bool ignore_merges = false;        // llama.cpp's ignore_merges
    bool add_bos = false;              // llama.cpp's default add_bos (tokenizer.ggml.add_bos_token overrides)
};

// The pre-tokenizer llama.cpp uses for `name`; nullptr for names it does not know or that are
// not plain regexes (see above). "" and "default" give llama.cpp's default regexes.
const LlamaPreTokenizer* llama_pre_tokenizer(const std::string& name);

// GPT-2's regex (the whole of ByteLevel's use_regex=true split).
const std::string& gpt2_split_regex();

}  // namespace ql
