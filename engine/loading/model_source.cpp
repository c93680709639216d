// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/loading/model_source.h"

#include <stdlib.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/core/demo_folder.h"
#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/export/hf_modelopt_checkpoint.h"
#include "engine/models/model_device.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/quantized_model_device.h"
#include "engine/text/tokenizer.h"
#include "engine/text/unicode_text.h"

namespace ql {

namespace {

std::string environment(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// huggingface_hub's repo id rule (validate_repo_id): "name" or "owner/name", letters, digits,
// '-', '_', '.', no "--" or "..", not starting or ending with '-' or '.'; at most 96 characters.
bool looks_like_repo_id(const std::string& id) {
    if (id.empty() || id.size() > 96 || id.find("--") != std::string::npos || id.find("..") != std::string::npos) return false;
    if (std::count(id.begin(), id.end(), '/') != 1) return false;  // a bare name would be a relative path
    for (char c : id)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.' && c != '/') return false;
    const size_t slash = id.find('/');
    for (const std::string& part : {id.substr(0, slash), id.substr(slash + 1)})
        if (part.empty() || part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.') return false;
    return true;
}

std::string read_ref(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string commit;
    std::getline(in, commit);
    while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
    return commit;
}

}  // namespace

std::string hugging_face_hub_cache() {
    if (std::string v = environment("HF_HUB_CACHE"); !v.empty()) return v;
    if (std::string v = environment("HUGGINGFACE_HUB_CACHE"); !v.empty()) return v;  // the older name
    if (std::string v = environment("HF_HOME"); !v.empty()) return v + "/hub";
    if (std::string v = environment("XDG_CACHE_HOME"); !v.empty()) return v + "/huggingface/hub";
    return environment("HOME") + "/.cache/huggingface/hub";
}

std::string resolve_model_path(const std::string& model) {
    if (model != "demo") {
        std::error_code ec;
        if (std::filesystem::exists(model, ec)) return model;
        const size_t at = model.find('@');
        const std::string id = model.substr(0, at);
        const std::string revision = at == std::string::npos ? "main" : model.substr(at + 1);
        if (!looks_like_repo_id(id) || revision.empty()) return model;
        const std::string cache = hugging_face_hub_cache();
        const std::filesystem::path repo = std::filesystem::path(cache) / ("models--" + id.substr(0, id.find('/')) + "--" +
                                                                           id.substr(id.find('/') + 1));
        if (!std::filesystem::is_directory(repo, ec))
            throw UserError(model + ": neither a path nor a model in the Hugging Face cache (" + repo.string() +
                            " does not exist; QuantLab does not download: fetch it with `huggingface-cli download " + id +
                            "`, or set HF_HOME / HF_HUB_CACHE to the cache that holds it)");
        // A branch or tag names a file under refs/ holding the commit; a commit names its snapshot.
        std::string commit = revision;
        if (std::filesystem::is_regular_file(repo / "refs" / revision, ec)) commit = read_ref(repo / "refs" / revision);
        const std::filesystem::path snapshot = repo / "snapshots" / commit;
        if (commit.empty() || !std::filesystem::is_directory(snapshot, ec))
            throw UserError(model + ": the Hugging Face cache " + repo.string() + " has no snapshot for revision '" + revision +
                            "'" + (commit != revision ? " (refs/" + revision + " names " + commit + ")" : ""));
        return snapshot.string();
    }
    const std::string dir = shipped_demo_dir();
    if (!demo_model_complete(dir))
        throw UserError("demo: the shipped demo model is missing from " + dir +
                        " (config.json, model.safetensors, quantlab.json); restore it from the QuantLab sources, "
                        "or train one with 'quantlab-cli demo --retrain' and open it by its path");
    return dir;
}

namespace {

// quantlab.json of a demo folder names the character vocabulary its ids belong to.
bool uses_demo_vocabulary(const std::string& folder) {
    std::ifstream in(folder + "/quantlab.json");
    if (!in) return false;
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    return j.is_object() && j.value("vocabulary", "") == "quantlab-synthetic-v1";
}

TextEncoder tokenizer_encoder(std::shared_ptr<const Tokenizer> tokenizer) {
    return [tokenizer](const std::string& text, const std::string&) {
        const std::vector<int32_t> ids = tokenizer->encode(text, /*add_special_tokens=*/false);
        return std::vector<int64_t>(ids.begin(), ids.end());
    };
}

// sentence_bert_config.json do_lower_case: sentence-transformers lower-cases the text (Python's
// str.lower; Rust's to_lowercase here, the same outside final-sigma contexts) before tokenizing.
std::string lowercase_text(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) text::append_lowercase(out, text::next_code_point(s, i));
    return out;
}

// Sentences: [CLS] text [SEP], at most the sentence length of the sentence-transformers config.
void set_sentence_encoder(OpenedModel& m, const std::shared_ptr<const Tokenizer>& tokenizer) {
    const ModelConfig& c = m.model->config();
    const SentenceEmbeddingConfig& st = c.sentence;
    m.data.sentence_length = st.max_seq_length > 0 ? std::min(st.max_seq_length, c.max_positions) : c.max_positions;
    m.data.pad_id = tokenizer->special_ids().pad.value_or(0);
    const bool lower = st.lowercase;
    m.data.encode_sentence = [tokenizer, lower](const std::string& text, const std::string& source, int64_t max_tokens) {
        const std::string valid = text::valid_utf8_prefix(text) == text.size() ? text : text::utf8_lossy(text);
        const std::vector<int32_t> ids =
            tokenizer->encode_truncated(lower ? lowercase_text(valid) : valid, static_cast<size_t>(max_tokens));
        if (ids.empty()) throw UserError(source + ": the tokenizer gives no tokens for a sentence");
        return std::vector<int64_t>(ids.begin(), ids.end());
    };
    m.mask_token_id = tokenizer->special_ids().mask.value_or(-1);
}

}  // namespace

OpenedModel open_model(const std::string& model, WeightStorage storage) {
    OpenedModel m;
    m.path = resolve_model_path(model);
    if (is_gguf_file(m.path)) {
        GgufModel g = load_gguf_model(m.path);
        m.model = std::move(g.model);
        m.gguf = std::make_shared<const GgufSource>(std::move(g.source));
    } else if (is_hf_modelopt_checkpoint(m.path)) {
        // A Model Optimizer HF checkpoint (QuantLab's hf-modelopt export or Model Optimizer's own).
        HfModeloptModel h = load_hf_modelopt_checkpoint(m.path);
        m.model = std::move(h.model);
        m.quantization = std::move(h.quantization);
    } else {
        m.model = load_hf_model(m.path, storage);
        m.quantization = load_quantization(*m.model, m.path);
    }
    const ModelConfig& c = m.model->config();
    m.data.vocab_size = c.architecture == "mlp" || c.architecture == "cnn" ? 0 : c.vocab_size;
    m.data.max_positions = c.max_positions;
    m.data.model_name = model;
    m.is_demo = m.gguf ? m.gguf->vocabulary.is_demo : uses_demo_vocabulary(m.path);
    if (m.gguf && m.gguf->vocabulary.tokenizer_json) {
        m.text = gguf_model_text(m.gguf->vocabulary, m.path);
        const auto tokenizer = m.text.tokenizer;
        m.data.encode_text = tokenizer_encoder(tokenizer);
        if (m.gguf->vocabulary.eos_id) m.data.eos_id = *m.gguf->vocabulary.eos_id;
        if (m.model->is_encoder()) set_sentence_encoder(m, tokenizer);  // a bert GGUF
    } else if (m.is_demo) {
        m.text = demo_text();
        m.data.encode_text = [](const std::string& text, const std::string& source) {
            return synthetic_vocab::encode(text, source);
        };
        m.data.eos_id = synthetic_vocab::kEos;
    }
    else if (std::error_code ec; std::filesystem::exists(m.path + "/tokenizer.json", ec)) {
        // Read when the model is opened, so a broken tokenizer.json is reported up front.
        m.text = hf_folder_text(m.path, c.vocab_size);
        const auto tokenizer = m.text.tokenizer;
        m.data.encode_text = tokenizer_encoder(tokenizer);
        // Documents are separated by the end-of-text token, as nanoGPT's prepare.py does.
        if (const auto eos = tokenizer->special_ids().eos) m.data.eos_id = *eos;
        if (m.model->is_encoder()) set_sentence_encoder(m, tokenizer);
    }
    if (m.text.bos_id && m.text.has_text()) {
        m.data.bos_id = *m.text.bos_id;
        const std::vector<int64_t> probe = m.text.encode_prompt("a");
        m.data.add_bos = !probe.empty() && probe.front() == *m.text.bos_id;
    }
    return m;
}

void move_opened_model(OpenedModel& m, at::Device device) {
    if (m.quantization) move_quantized_model(*m.quantization, device);
    else move_model(*m.model, device);
}

ModelSourceFiles::ModelSourceFiles(const OpenedModel& m) : folder_(m.path) {
    if (!m.gguf) return;
    std::string tmpl = (std::filesystem::temp_directory_path() / "quantlab-gguf-source-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw UserError("cannot create a temporary folder for " + m.path + "'s model files");
    folder_ = tmpl;
    temporary_ = true;
    write_gguf_model_files(m.model->config(), *m.gguf, folder_);
}

ModelSourceFiles::~ModelSourceFiles() {
    if (!temporary_) return;
    std::error_code ec;
    std::filesystem::remove_all(folder_, ec);
}

}  // namespace ql
