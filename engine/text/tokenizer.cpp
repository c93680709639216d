// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/tokenizer.h"

#include <fstream>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/whole_file.h"
#include "engine/text/added_vocabulary.h"
#include "engine/text/tokenizer_components.h"
#include "engine/text/unicode_text.h"

namespace ql {

using text::Json;
using text::JsonPath;

struct Tokenizer::Impl {
    std::string name;
    std::unique_ptr<text::Normalizer> normalizer;
    std::unique_ptr<text::PreTokenizer> pre_tokenizer;
    std::unique_ptr<text::TokenizerModel> model;
    std::unique_ptr<text::PostProcessor> post_processor;
    std::unique_ptr<text::Decoder> decoder;
    text::AddedVocabulary added;
    SpecialTokenIds special;
    TokenizerDescription description;
};

namespace {

const Json& field(const Json& root, const char* key) {
    static const Json null;
    const auto it = root.find(key);
    return it == root.end() ? null : *it;
}

void read_added_tokens(const Json& root, const JsonPath& at, const text::TokenizerModel& model, text::AddedVocabulary& added) {
    const Json& list = field(root, "added_tokens");
    if (list.is_null()) return;
    if (!list.is_array()) at.fail("expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
        const Json& j = list[i];
        const JsonPath tat = at[i];
        text::AddedToken t;
        t.content = tat.string(j, "content");
        if (text::valid_utf8_prefix(t.content) != t.content.size()) (tat / "content").fail("not valid UTF-8");
        const int64_t id = tat.integer(j, "id", -1);
        if (id < 0 || id >= (int64_t{1} << 24)) (tat / "id").fail("expected a token id in [0, 2^24)");
        t.special = tat.boolean(j, "special", false);
        t.normalized = tat.boolean(j, "normalized", !t.special);
        t.lstrip = tat.boolean(j, "lstrip", false);
        t.rstrip = tat.boolean(j, "rstrip", false);
        t.single_word = tat.boolean(j, "single_word", false);
        // A token the model already has keeps the model's id (AddedVocabulary::add_tokens).
        const auto model_id = model.token_to_id(t.content);
        t.id = model_id ? *model_id : static_cast<int32_t>(id);
        added.add(std::move(t));
    }
}

std::optional<int32_t> lookup(const Tokenizer::Impl& impl, std::string_view token) {
    if (auto id = impl.added.id(token)) return id;
    return impl.model->token_to_id(token);
}

// Special token roles: see SpecialTokenIds.
void find_special_ids(Tokenizer::Impl& impl, const Json& root) {
    SpecialTokenIds& s = impl.special;
    if (impl.post_processor) {
        const text::TemplateEnds ends = impl.post_processor->ends();
        const std::string kind = impl.post_processor->describe();
        const bool bert_like = impl.model->type() == "WordPiece" || kind.find("Bert") != std::string::npos;
        const bool roberta = kind.find("Roberta") != std::string::npos;
        if (!ends.before.empty()) {
            if (bert_like || roberta) s.cls = ends.before.front();
            if (!bert_like) s.bos = ends.before.front();
        }
        if (!ends.after.empty()) {
            if (bert_like || roberta) s.sep = ends.after.back();
            if (!bert_like) s.eos = ends.after.back();
        }
    }
    if (const auto unk = impl.model->unk_token()) s.unk = lookup(impl, *unk);
    const Json& padding = field(root, "padding");
    if (padding.is_object() && padding.contains("pad_id") && padding["pad_id"].is_number_integer())
        s.pad = padding["pad_id"].get<int32_t>();
    auto by_name = [&](std::optional<int32_t>& role, std::initializer_list<const char*> names) {
        for (const char* n : names) {
            if (role) return;
            if (!impl.added.is_special_content(n)) continue;
            role = lookup(impl, n);
        }
    };
    by_name(s.bos, {"<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>"});
    by_name(s.eos, {"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>"});
    by_name(s.pad, {"<pad>", "[PAD]", "<|pad|>"});
    by_name(s.unk, {"<unk>", "[UNK]"});
    by_name(s.cls, {"[CLS]"});
    by_name(s.sep, {"[SEP]"});
    by_name(s.mask, {"[MASK]", "<mask>"});
}

// tokenizer_config.json names the roles outright ("bos_token": "<s>" or {"content": "<s>", ...}).
void read_tokenizer_config(Tokenizer::Impl& impl, const std::string& path) {
    std::ifstream probe(path);
    if (!probe) return;
    Json config;
    try {
        config = Json::parse(read_whole_file(path, "tokenizer file"));
    } catch (const Json::exception& e) {
        throw UserError(path + ": not valid JSON: " + e.what());
    }
    if (!config.is_object()) return;
    auto role = [&](std::optional<int32_t>& slot, const char* key) {
        const Json& v = field(config, key);
        std::string name;
        if (v.is_string()) {
            name = v.get<std::string>();
        } else if (v.is_object() && v.contains("content") && v["content"].is_string()) {
            name = v["content"].get<std::string>();
        } else {
            return;
        }
        if (auto id = lookup(impl, name)) slot = id;
    };
    SpecialTokenIds& s = impl.special;
    role(s.bos, "bos_token");
    role(s.eos, "eos_token");
    role(s.pad, "pad_token");
    role(s.unk, "unk_token");
    role(s.cls, "cls_token");
    role(s.sep, "sep_token");
    role(s.mask, "mask_token");
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(const std::string& json_text, const std::string& name) {
    Json root;
    try {
        root = Json::parse(json_text);
    } catch (const Json::exception& e) {
        throw UserError(name + ": not valid JSON: " + e.what());
    }
    if (!root.is_object()) throw UserError(name + ": not a tokenizer.json: expected a JSON object at the top level");
    auto impl = std::make_unique<Impl>();
    impl->name = name;
    const JsonPath at(impl->name, "");
    try {
        if (!root.contains("model")) (at / "model").fail("missing (every tokenizer.json has a model)");
        impl->model = text::make_model(root["model"], at / "model");
        impl->normalizer = text::make_normalizer(field(root, "normalizer"), at / "normalizer");
        impl->pre_tokenizer = text::make_pre_tokenizer(field(root, "pre_tokenizer"), at / "pre_tokenizer");
        impl->post_processor = text::make_post_processor(field(root, "post_processor"), at / "post_processor");
        impl->decoder = text::make_decoder(field(root, "decoder"), at / "decoder");
        read_added_tokens(root, at / "added_tokens", *impl->model, impl->added);
        impl->added.build(impl->normalizer.get());
    } catch (const Json::exception& e) {  // a shape the accessors did not anticipate
        throw UserError(name + ": invalid tokenizer.json: " + e.what());
    }
    find_special_ids(*impl, root);

    TokenizerDescription& d = impl->description;
    d.source = name;
    d.model_type = impl->model->type();
    d.normalizer = impl->normalizer ? impl->normalizer->describe() : "none";
    d.pre_tokenizer = impl->pre_tokenizer ? impl->pre_tokenizer->describe() : "none";
    d.post_processor = impl->post_processor ? impl->post_processor->describe() : "none";
    d.decoder = impl->decoder ? impl->decoder->describe() : "none";
    d.byte_fallback = impl->model->byte_fallback();
    d.model_vocab_size = impl->model->size();
    d.merges = impl->model->merges();
    d.added_tokens = impl->added.tokens().size();
    for (const auto& t : impl->added.tokens()) d.special_tokens += t.special;
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
    Tokenizer t = from_json(read_whole_file(path, "tokenizer file"), path);
    const size_t slash = path.find_last_of('/');
    read_tokenizer_config(*t.impl_, (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "tokenizer_config.json");
    return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool add_special_tokens) const {
    std::string repaired;
    if (text::valid_utf8_prefix(input) != input.size()) {
        repaired = text::utf8_lossy(input);
        input = repaired;
    }
    std::vector<int32_t> ids;
    ids.reserve(input.size() / 3 + 4);
    std::vector<text::Piece> pieces;
    for (text::Segment& seg : impl_->added.extract_and_normalize(input, impl_->normalizer.get())) {
        if (seg.id >= 0) {
            ids.push_back(seg.id);
            continue;
        }
        pieces.clear();
        pieces.push_back({std::move(seg.text), seg.at_start});
        if (impl_->pre_tokenizer) impl_->pre_tokenizer->pre_tokenize(pieces);
        for (const text::Piece& p : pieces)
            if (!p.text.empty()) impl_->model->tokenize(p.text, ids);
    }
    if (impl_->post_processor) impl_->post_processor->process(ids, add_special_tokens);
    return ids;
}

std::vector<int32_t> Tokenizer::encode_truncated(std::string_view text, size_t max_length) const {
    std::vector<int32_t> ids = encode(text, /*add_special_tokens=*/false);
    size_t specials = 0;
    if (impl_->post_processor) {
        const text::TemplateEnds ends = impl_->post_processor->ends();
        specials = ends.before.size() + ends.after.size();
    }
    // tokenizers' truncate_encodings: the sequence keeps max_length - added special tokens.
    if (max_length > 0 && ids.size() + specials > max_length) ids.resize(max_length > specials ? max_length - specials : 0);
    if (impl_->post_processor) impl_->post_processor->process(ids, /*add_special_tokens=*/true);
    return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        const std::string* s = nullptr;
        if (const text::AddedToken* t = impl_->added.by_id(id)) {
            s = &t->decode_form;
        } else {
            s = impl_->model->id_to_token(id);
        }
        if (!s) continue;
        if (skip_special_tokens && impl_->added.is_special_content(*s)) continue;
        tokens.push_back(*s);
    }
    if (!impl_->decoder) {
        std::string out;
        for (size_t k = 0; k < tokens.size(); ++k) out += (k ? " " : "") + tokens[k];
        return out;
    }
    impl_->decoder->decode_chain(tokens);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
}

size_t Tokenizer::vocab_size() const {
    return static_cast<size_t>(std::max(impl_->model->max_id(), impl_->added.max_id()) + 1);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return lookup(*impl_, token); }

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
    if (const text::AddedToken* t = impl_->added.by_id(id)) return t->content;
    if (const std::string* s = impl_->model->id_to_token(id)) return *s;
    return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
    const text::AddedToken* t = impl_->added.by_id(id);
    return t && t->special;
}

const SpecialTokenIds& Tokenizer::special_ids() const { return impl_->special; }
const TokenizerDescription& Tokenizer::description() const { return impl_->description; }

}  // namespace ql
