// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/loading/llama_pre_tokenizers.h"

#include <map>

namespace ql {
namespace {

// The regexes as llama-vocab.cpp writes them (its "adapted" forms: (?i:'s|...) spelt as
// '[sS]|..., which PCRE2 and llama.cpp's own matcher read alike).
const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const std::string kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
const std::string kLlama3 =
    kContractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 =
    kContractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen35 =
    kContractions + R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kDeepseek3 =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kTekkenWords =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)";
const std::string kTekken = kTekkenWords + R"(|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)" +
                            R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kGpt4o = kTekkenWords + "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?" +
                           R"(|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)" +
                           "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?" +
                           R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kPoro = " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+";
const std::string kCjk3 = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+";

struct PreTokenizerEntry {
    std::vector<std::string> names;
    LlamaPreTokenizer pre;
};

const std::vector<PreTokenizerEntry>& entries() {
    static const std::vector<PreTokenizerEntry> all = {
        {{"", "default"},
         {"default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false, false}},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
         {"llama3", {kLlama3}, true, true}},
        {{"dbrx"}, {"dbrx", {kLlama3}, false, false}},
        {{"smaug-bpe"}, {"smaug", {kLlama3}, false, false}},
        {{"chatglm-bpe"}, {"chatglm4", {kLlama3}, false, false}},
        {{"glm4", "glm5"}, {"chatglm4", {kLlama3}, true, false}},
        {{"deepseek-coder"},
         {"deepseek-coder", {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", R"(\p{N})"},
          false, false}},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
         {"deepseek3-llm", {R"(\p{N}{1,3})", kCjk3, kDeepseek3}, false, false}},
        {{"falcon"}, {"falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, false, false}},
        {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert",
          "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "trillion", "granite-docling"},
         {"gpt2", {kGpt2}, false, false}},
        {{"jais"}, {"jais", {kGpt2}, true, false}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
         {"smollm", {R"(\p{N})", kGpt2}, false, false}},
        {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2"},
         {"qwen2", {kQwen2}, false, false}},
        {{"qwen35"}, {"qwen35", {kQwen35}, false, false}},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {"poro", {kPoro}, false, false}},
        {{"viking"}, {"viking", {kPoro, R"(\p{N})"}, false, false}},
        {{"tekken"}, {"tekken", {kTekken}, true, false}},
        {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {"gpt4o", {kGpt4o}, false, false}},
        {{"seed-coder"},
         {"seed-coder",
          {kContractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"}, false,
          false}},
        {{"ufakzeka"}, {"ufakzeka", {R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}, false, false}},
        {{"laguna"}, {"laguna", {"[^\\n]+|[\\n]+", kQwen2}, false, false}},
        {{"minicpm5"},
         {"minicpm5",
          {R"(\p{N}{1,3})", kContractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
          true, false}},
    };
    return all;
}

}  // namespace

const std::string& gpt2_split_regex() { return kGpt2; }

const LlamaPreTokenizer* llama_pre_tokenizer(const std::string& name) {
    static const std::map<std::string, const LlamaPreTokenizer*> by_name = [] {
        std::map<std::string, const LlamaPreTokenizer*> m;
        for (const PreTokenizerEntry& e : entries())
            for (const std::string& n : e.names) m.emplace(n, &e.pre);
        return m;
    }();
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
}

}  // namespace ql
