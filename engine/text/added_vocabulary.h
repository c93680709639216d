// SPDX-License-Identifier: GPL-3.0-or-later
// The "added_tokens" of a tokenizer.json (tokenizers/src/tokenizer/added_vocabulary.rs): the
// input is split on them before anything else, leftmost-longest. Tokens with normalized=false
// are matched in the raw text; the rest of the text is then normalized and split on the tokens
// with normalized=true (matched in their normalized form). lstrip / rstrip absorb whitespace
// next to a match, single_word rejects matches inside a word.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/text/tokenizer_components.h"

namespace ql::text {

struct AddedToken {
    std::string content;
    int32_t id = -1;
    bool special = false, normalized = true, lstrip = false, rstrip = false, single_word = false;
    std::string decode_form;  // what decoding passes to the decoder: the normalized content when normalized
};

// A stretch of the input: either an added token (id >= 0) or normalized text for the pre-tokenizer.
struct Segment {
    std::string text;
    int32_t id = -1;
    bool at_start = false;
};

class AddedVocabulary {
public:
    // Later tokens with the same content or id replace earlier ones (as the reference's maps do).
    void add(AddedToken token);
    // Computes normalized forms and builds the matchers; call once after the last add().
    void build(const Normalizer* normalizer);

    std::vector<Segment> extract_and_normalize(std::string_view text, const Normalizer* normalizer) const;

    const AddedToken* by_id(int32_t id) const;
    std::optional<int32_t> id(std::string_view content) const;
    bool is_special_content(const std::string& content) const { return special_contents_.count(content) > 0; }
    const std::vector<AddedToken>& tokens() const { return tokens_; }
    int32_t max_id() const;

private:
    // A byte trie for leftmost-longest matching.
    struct Trie {
        struct Node {
            std::vector<std::pair<unsigned char, int32_t>> next;
            int32_t token = -1;  // index into tokens_
        };
        std::vector<Node> nodes{1};
        bool first_byte[256] = {};
        void insert(const std::string& pattern, int32_t token);
        // Longest pattern starting at s[pos]: its length and token, or {0, -1}.
        std::pair<size_t, int32_t> longest_at(std::string_view s, size_t pos) const;
        bool empty() const { return nodes.size() == 1; }
    };
    struct Match {
        int32_t token;  // index into tokens_, -1 for text between matches
        size_t begin, end;
    };
    std::vector<Match> find_matches(std::string_view s, const Trie& trie) const;

    std::vector<AddedToken> tokens_;
    std::unordered_map<int32_t, size_t> by_id_;
    std::unordered_map<std::string, int32_t> by_content_;
    std::unordered_set<std::string> special_contents_;
    Trie raw_, normalized_;
};

}  // namespace ql::text
