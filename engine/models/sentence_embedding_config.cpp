// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/sentence_embedding_config.h"

#include <algorithm>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kPoolingModes[] = {"cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"};
// sentence_transformers/sentence_transformer/modules/pooling.py _LEGACY_POOLING_MODE_KWARGS, in
// its concatenation order.
constexpr std::pair<const char*, const char*> kLegacyPoolingKeys[] = {
    {"pooling_mode_cls_token", "cls"},
    {"pooling_mode_max_tokens", "max"},
    {"pooling_mode_mean_tokens", "mean"},
    {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
    {"pooling_mode_weightedmean_tokens", "weightedmean"},
    {"pooling_mode_lasttoken", "lasttoken"},
};

json read_json_file(const fs::path& path) {
    const std::string text = read_whole_file(path.string(), "sentence-transformers file");
    try {
        return parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError(path.string() + ": not valid JSON: " + e.what());
    }
}

[[noreturn]] void fail(const fs::path& file, const std::string& key, const std::string& what) {
    throw UserError(file.string() + ": key '" + key + "': " + what);
}

// The module type's last component: "sentence_transformers.models.Pooling" and the newer
// "sentence_transformers.sentence_transformer.modules.Pooling" are both "Pooling".
std::string module_kind(const std::string& type) {
    const size_t dot = type.find_last_of('.');
    return dot == std::string::npos ? type : type.substr(dot + 1);
}

bool known_mode(const std::string& m) {
    return std::find(std::begin(kPoolingModes), std::end(kPoolingModes), m) != std::end(kPoolingModes);
}

// A module path must stay inside the model folder (a lying modules.json cannot point elsewhere).
fs::path module_folder(const fs::path& folder, const fs::path& file, size_t index, const std::string& path) {
    const fs::path p(path);
    if (p.is_absolute() || std::any_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; }))
        fail(file, "[" + std::to_string(index) + "].path", "'" + path + "' leaves the model folder");
    return folder / p;
}

void read_pooling(const fs::path& dir, SentenceEmbeddingConfig& c, int64_t hidden_size) {
    const fs::path file = dir / "config.json";
    const json j = read_json_file(file);
    if (!j.is_object()) throw UserError(file.string() + ": expected a JSON object");
    for (const char* key : {"embedding_dimension", "word_embedding_dimension"}) {
        if (!j.contains(key)) continue;
        if (!j[key].is_number_integer()) fail(file, key, "expected an integer");
        if (j[key].get<int64_t>() != hidden_size)
            fail(file, key, std::to_string(j[key].get<int64_t>()) + " differs from the model's hidden_size " +
                                std::to_string(hidden_size));
    }
    if (j.contains("include_prompt") && !(j["include_prompt"].is_boolean() && j["include_prompt"].get<bool>()))
        fail(file, "include_prompt", "only true is supported (QuantLab embeds sentences without prompts)");
    std::vector<std::string> modes;
    if (j.contains("pooling_mode") && !j["pooling_mode"].is_null()) {
        const json& m = j["pooling_mode"];
        if (m.is_string()) {
            modes.push_back(m.get<std::string>());
        } else if (m.is_array() && !m.empty()) {
            for (const json& e : m) {
                if (!e.is_string()) fail(file, "pooling_mode", "expected a mode name or a list of names");
                modes.push_back(e.get<std::string>());
            }
        } else {
            fail(file, "pooling_mode", "expected a mode name or a non-empty list of names");
        }
    } else {
        for (const auto& [key, mode] : kLegacyPoolingKeys) {
            if (!j.contains(key)) continue;
            if (!j[key].is_boolean()) fail(file, key, "expected true or false");
            if (j[key].get<bool>()) modes.push_back(mode);
        }
        if (modes.empty()) modes.push_back("mean");  // _convert_legacy_pooling_kwargs' default
    }
    for (const std::string& m : modes)
        if (!known_mode(m))
            fail(file, "pooling_mode",
                 "'" + m + "' is not a pooling mode (cls, max, mean, mean_sqrt_len_tokens, weightedmean, lasttoken)");
    c.pooling = modes;
}

void read_transformer_settings(const fs::path& folder, SentenceEmbeddingConfig& c) {
    const fs::path file = folder / "sentence_bert_config.json";
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return;
    const json j = read_json_file(file);
    if (!j.is_object()) throw UserError(file.string() + ": expected a JSON object");
    if (j.contains("max_seq_length") && !j["max_seq_length"].is_null()) {
        if (!j["max_seq_length"].is_number_integer() || j["max_seq_length"].get<int64_t>() < 2)
            fail(file, "max_seq_length", "expected an integer >= 2 (tokens including [CLS] and [SEP])");
        c.max_seq_length = j["max_seq_length"].get<int64_t>();
    }
    if (j.contains("do_lower_case")) {
        if (!j["do_lower_case"].is_boolean()) fail(file, "do_lower_case", "expected true or false");
        c.lowercase = j["do_lower_case"].get<bool>();
    }
}

}  // namespace

std::string SentenceEmbeddingConfig::pooling_name() const {
    std::string s;
    for (const std::string& m : pooling) s += (s.empty() ? "" : "+") + m;
    return s;
}

SentenceEmbeddingConfig read_sentence_embedding_config(const std::string& folder_name, int64_t hidden_size) {
    SentenceEmbeddingConfig c;
    const fs::path folder(folder_name);
    const fs::path file = folder / "modules.json";
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return c;
    const json modules = read_json_file(file);
    if (!modules.is_array() || modules.empty()) throw UserError(file.string() + ": expected a non-empty array of modules");
    c.source = "modules.json";
    bool transformer = false, pooling = false;
    for (size_t i = 0; i < modules.size(); ++i) {
        const json& m = modules[i];
        const std::string at = "[" + std::to_string(i) + "]";
        if (!m.is_object() || !m.contains("type") || !m["type"].is_string())
            fail(file, at + ".type", "expected the module's class name");
        const std::string path = m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
        const std::string kind = module_kind(m["type"].get<std::string>());
        if (kind == "Transformer") {
            if (transformer || i != 0) fail(file, at + ".type", "the Transformer module must come first, once");
            transformer = true;
            read_transformer_settings(path.empty() ? folder : module_folder(folder, file, i, path), c);
        } else if (kind == "Pooling") {
            if (!transformer || pooling) fail(file, at + ".type", "one Pooling module after the Transformer expected");
            pooling = true;
            read_pooling(module_folder(folder, file, i, path), c, hidden_size);
        } else if (kind == "Normalize") {
            if (!pooling || c.normalize) fail(file, at + ".type", "Normalize must follow Pooling, once");
            c.normalize = true;
        } else {
            fail(file, at + ".type",
                 "module '" + m["type"].get<std::string>() +
                     "' is not supported (QuantLab runs Transformer, Pooling and Normalize modules)");
        }
        if (!path.empty()) c.module_folders.push_back(path);
    }
    if (!transformer || !pooling) fail(file, "type", "expected a Transformer module followed by a Pooling module");
    return c;
}

}  // namespace ql

namespace ql {

void copy_sentence_module_folders(const std::string& source, const std::string& target) {
    const fs::path file = fs::path(source) / "modules.json";
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return;
    const json modules = read_json_file(file);
    if (!modules.is_array()) throw UserError(file.string() + ": expected a non-empty array of modules");
    for (size_t i = 0; i < modules.size(); ++i) {
        const json& m = modules[i];
        if (!m.is_object() || !m.contains("path") || !m["path"].is_string() || m["path"].get<std::string>().empty()) continue;
        const std::string path = m["path"].get<std::string>();
        const fs::path from = module_folder(fs::path(source), file, i, path);
        if (!fs::is_directory(from, ec)) continue;
        const fs::path to = fs::path(target) / path;
        fs::create_directories(to, ec);
        if (!ec) fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
        if (ec) throw UserError("cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
    }
}

}  // namespace ql
