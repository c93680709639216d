// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/loading/model_text.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/io/whole_file.h"
#include "engine/loading/gguf_vocabulary.h"
#include "engine/text/tokenizer.h"

namespace ql {
namespace {

using TextJson = nlohmann::json;

std::vector<int64_t> text_ids_widened(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

std::vector<int32_t> text_ids_narrowed(const std::vector<int64_t>& ids) {
    std::vector<int32_t> out;
    out.reserve(ids.size());
    for (int64_t id : ids) out.push_back(static_cast<int32_t>(id));
    return out;
}

// A JSON file of the folder, or null when absent.
TextJson optional_text_json(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return nullptr;
    try {
        return TextJson::parse(read_whole_file(path, "model file"));
    } catch (const nlohmann::json::exception& e) {
        throw UserError(path + ": not valid JSON: " + e.what());
    }
}

// "bos_token": "<s>" or {"content": "<s>", ...}
std::string token_content(const TextJson& config, const char* key) {
    const auto it = config.find(key);
    if (it == config.end()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
    return "";
}

void check_id(int64_t id, int64_t vocab_size, const std::string& file, const std::string& key) {
    if (id < 0 || id >= vocab_size)
        throw UserError(file + ": " + key + " " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(vocab_size) + " tokens");
}

void add_end_id(ModelText& t, int64_t id) {
    if (std::find(t.end_ids.begin(), t.end_ids.end(), id) == t.end_ids.end()) t.end_ids.push_back(id);
}

void set_codec(ModelText& t, std::shared_ptr<const Tokenizer> tokenizer, bool prepend_bos) {
    t.tokenizer = tokenizer;
    const std::optional<int64_t> bos = prepend_bos ? t.bos_id : std::nullopt;
    t.encode_prompt = [tokenizer, bos](const std::string& text) {
        std::vector<int64_t> ids = text_ids_widened(tokenizer->encode(text, /*add_special_tokens=*/true));
        if (bos && (ids.empty() || ids.front() != *bos)) ids.insert(ids.begin(), *bos);
        return ids;
    };
    t.encode_rendered = [tokenizer](const std::string& text) {
        return text_ids_widened(tokenizer->encode(text, /*add_special_tokens=*/false));
    };
    t.decode = [tokenizer](const std::vector<int64_t>& ids) { return tokenizer->decode(text_ids_narrowed(ids)); };
}

}  // namespace

ModelText hf_folder_text(const std::string& folder, int64_t vocab_size) {
    ModelText t;
    std::error_code ec;
    const std::string tokenizer_path = folder + "/tokenizer.json";
    if (!std::filesystem::exists(tokenizer_path, ec)) return t;
    auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_file(tokenizer_path));
    const SpecialTokenIds& special = tokenizer->special_ids();
    if (special.bos) t.bos_id = *special.bos;
    if (special.eos) t.eos_id = *special.eos;

    const std::string config_path = folder + "/tokenizer_config.json";
    const TextJson config = optional_text_json(config_path);
    if (config.is_object()) {
        t.bos_token = token_content(config, "bos_token");
        t.eos_token = token_content(config, "eos_token");
        const auto it = config.find("chat_template");
        if (it != config.end() && it->is_string()) {
            t.chat_template = it->get<std::string>();
            t.chat_template_origin = config_path + ": chat_template";
        } else if (it != config.end() && it->is_array()) {
            // Several named templates: transformers uses "default" for plain chat.
            for (const TextJson& named : *it)
                if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
                    named["template"].is_string()) {
                    t.chat_template = named["template"].get<std::string>();
                    t.chat_template_origin = config_path + ": chat_template[name=default]";
                }
        } else if (it != config.end() && !it->is_null()) {
            throw UserError(config_path + ": chat_template: expected a string or a list of {name, template}");
        }
    }
    const std::string jinja_path = folder + "/chat_template.jinja";
    if (std::filesystem::is_regular_file(jinja_path, ec)) {
        // transformers reads chat_template.jinja in preference to the config's key.
        t.chat_template = read_whole_file(jinja_path, "chat template");
        t.chat_template_origin = jinja_path;
    }
    if (t.bos_token.empty() && t.bos_id) t.bos_token = tokenizer->id_to_token(static_cast<int32_t>(*t.bos_id)).value_or("");
    if (t.eos_token.empty() && t.eos_id) t.eos_token = tokenizer->id_to_token(static_cast<int32_t>(*t.eos_id)).value_or("");

    if (t.eos_id) {
        check_id(*t.eos_id, vocab_size, tokenizer_path, "eos token id");
        add_end_id(t, *t.eos_id);
    }
    if (t.bos_id) check_id(*t.bos_id, vocab_size, tokenizer_path, "bos token id");
    const std::string generation_path = folder + "/generation_config.json";
    const TextJson generation = optional_text_json(generation_path);
    if (generation.is_object() && generation.contains("eos_token_id")) {
        const TextJson& e = generation["eos_token_id"];
        const TextJson list = e.is_array() ? e : TextJson::array({e});
        for (const TextJson& id : list) {
            if (id.is_null()) continue;
            if (!id.is_number_integer()) throw UserError(generation_path + ": eos_token_id: expected an integer or a list of them");
            check_id(id.get<int64_t>(), vocab_size, generation_path, "eos_token_id");
            add_end_id(t, id.get<int64_t>());
        }
    }
    set_codec(t, tokenizer, /*prepend_bos=*/false);  // the post-processor adds what the model wants
    return t;
}

ModelText gguf_model_text(const GgufVocabulary& v, const std::string& path) {
    ModelText t;
    if (!v.tokenizer_json) return t;
    auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_json(*v.tokenizer_json, path + " (tokenizer.ggml.*)"));
    if (v.bos_id) t.bos_id = *v.bos_id;
    if (v.eos_id) t.eos_id = *v.eos_id;
    if (t.bos_id) t.bos_token = tokenizer->id_to_token(static_cast<int32_t>(*t.bos_id)).value_or("");
    if (t.eos_id) t.eos_token = tokenizer->id_to_token(static_cast<int32_t>(*t.eos_id)).value_or("");
    // llama.cpp's end of generation: eos, eot and eom (llama_vocab::is_eog).
    for (const auto& id : {v.eos_id, v.eot_id, v.eom_id})
        if (id) add_end_id(t, *id);
    if (v.chat_template) {
        t.chat_template = *v.chat_template;
        t.chat_template_origin = path + ": tokenizer.chat_template";
    }
    // The rebuilt tokenizer.json has no post-processor tokens: BOS as llama.cpp adds it.
    set_codec(t, tokenizer, v.add_bos && t.bos_id.has_value());
    return t;
}

ModelText demo_text() {
    ModelText t;
    t.bos_id = synthetic_vocab::kBos;
    t.eos_id = synthetic_vocab::kEos;
    t.bos_token = synthetic_vocab::token_text(synthetic_vocab::kBos);
    t.eos_token = synthetic_vocab::token_text(synthetic_vocab::kEos);
    t.end_ids = {synthetic_vocab::kEos};
    // Every demo sequence starts with <bos> (docs/DATA.md "<bos> a0 a1 a2 op b0 b1 b2 = ..."): a
    // prompt without it is not a problem the model was trained on.
    t.encode_prompt = [](const std::string& text) {
        std::vector<int64_t> ids = {synthetic_vocab::kBos};
        const std::vector<int64_t> rest = synthetic_vocab::encode(text, "prompt");
        ids.insert(ids.end(), rest.begin(), rest.end());
        return ids;
    };
    t.encode_rendered = t.encode_prompt;
    t.decode = [](const std::vector<int64_t>& ids) { return synthetic_vocab::decode(ids); };
    return t;
}

}  // namespace ql
