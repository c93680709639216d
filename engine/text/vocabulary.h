// SPDX-License-Identifier: GPL-3.0-or-later
// A model vocabulary from tokenizer.json ({"token": id, ...}): lookups both ways without
// allocating (keys are views into storage the vocabulary owns).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/text/tokenizer_components.h"

namespace ql::text {

class Vocabulary {
public:
    Vocabulary(const Json& j, const JsonPath& at);
    Vocabulary(const Vocabulary&) = delete;
    Vocabulary& operator=(const Vocabulary&) = delete;

    int32_t find(std::string_view token) const {
        const auto it = ids_.find(token);
        return it == ids_.end() ? -1 : it->second;
    }
    std::optional<int32_t> id(std::string_view token) const {
        const int32_t v = find(token);
        return v < 0 ? std::nullopt : std::optional<int32_t>(v);
    }
    const std::string* token(int32_t id) const {
        return id >= 0 && static_cast<size_t>(id) < by_id_.size() ? by_id_[id] : nullptr;
    }
    size_t size() const { return ids_.size(); }
    int32_t max_id() const { return static_cast<int32_t>(by_id_.size()) - 1; }

private:
    std::vector<std::string> storage_;
    std::unordered_map<std::string_view, int32_t> ids_;
    std::vector<const std::string*> by_id_;
};

std::unique_ptr<TokenizerModel> make_bpe_model(const Json& j, const JsonPath& at);
std::unique_ptr<TokenizerModel> make_wordpiece_model(const Json& j, const JsonPath& at);
std::unique_ptr<TokenizerModel> make_wordlevel_model(const Json& j, const JsonPath& at);

}  // namespace ql::text
