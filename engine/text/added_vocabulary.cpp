// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/added_vocabulary.h"

#include <algorithm>

#include "engine/text/unicode_text.h"

namespace ql::text {

void AddedVocabulary::Trie::insert(const std::string& pattern, int32_t token) {
    if (pattern.empty()) return;
    size_t node = 0;
    for (unsigned char b : pattern) {
        auto& next = nodes[node].next;
        const auto it = std::find_if(next.begin(), next.end(), [b](const auto& e) { return e.first == b; });
        if (it != next.end()) {
            node = static_cast<size_t>(it->second);
        } else {
            next.emplace_back(b, static_cast<int32_t>(nodes.size()));
            node = nodes.size();
            nodes.emplace_back();
        }
    }
    nodes[node].token = token;
    first_byte[static_cast<unsigned char>(pattern[0])] = true;
}

std::pair<size_t, int32_t> AddedVocabulary::Trie::longest_at(std::string_view s, size_t pos) const {
    std::pair<size_t, int32_t> best{0, -1};
    size_t node = 0;
    for (size_t i = pos; i < s.size(); ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        const auto& next = nodes[node].next;
        const auto it = std::find_if(next.begin(), next.end(), [b](const auto& e) { return e.first == b; });
        if (it == next.end()) break;
        node = static_cast<size_t>(it->second);
        if (nodes[node].token >= 0) best = {i + 1 - pos, nodes[node].token};
    }
    return best;
}

void AddedVocabulary::add(AddedToken token) {
    if (token.content.empty()) return;
    const auto same_id = by_id_.find(token.id);
    if (same_id != by_id_.end()) {
        tokens_[same_id->second] = std::move(token);
    } else {
        by_id_[token.id] = tokens_.size();
        tokens_.push_back(std::move(token));
    }
}

void AddedVocabulary::build(const Normalizer* normalizer) {
    by_content_.clear();
    special_contents_.clear();
    raw_ = Trie();
    normalized_ = Trie();
    for (size_t k = 0; k < tokens_.size(); ++k) {
        AddedToken& t = tokens_[k];
        by_content_[t.content] = t.id;
        if (t.special) special_contents_.insert(t.content);
        t.decode_form = t.content;
        if (t.normalized) {
            if (normalizer) normalizer->normalize(t.decode_form);
            normalized_.insert(t.decode_form, static_cast<int32_t>(k));
        } else {
            raw_.insert(t.content, static_cast<int32_t>(k));
        }
    }
}

const AddedToken* AddedVocabulary::by_id(int32_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::id(std::string_view content) const {
    const auto it = by_content_.find(std::string(content));
    return it == by_content_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

int32_t AddedVocabulary::max_id() const {
    int32_t m = -1;
    for (const auto& t : tokens_) m = std::max(m, t.id);
    return m;
}

namespace {

// Regexes of added_vocabulary.rs (Rust `regex` crate, Unicode \w and \s) as plain scans.
bool ends_with_word(std::string_view s) {
    if (s.empty()) return false;
    size_t start = s.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    return is_regex_word(next_code_point(s, start));
}

bool starts_with_word(std::string_view s) {
    if (s.empty()) return false;
    size_t i = 0;
    return is_regex_word(next_code_point(s, i));
}

// Start of the whitespace run that ends `s` (\s*$).
size_t space_leftmost_at_end(std::string_view s) {
    size_t end = s.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t i = start;
        if (!is_white_space(next_code_point(s, i))) break;
        end = start;
    }
    return end;
}

// Length of the whitespace run that starts `s` (^\s*).
size_t space_rightmost_at_start(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        size_t j = i;
        if (!is_white_space(next_code_point(s, j))) break;
        i = j;
    }
    return i;
}

}  // namespace

// AddedVocabulary::find_matches: the returned matches cover the whole of `s`.
std::vector<AddedVocabulary::Match> AddedVocabulary::find_matches(std::string_view s, const Trie& trie) const {
    if (s.empty()) return {{-1, 0, 0}};
    if (trie.empty()) return {{-1, 0, s.size()}};
    std::vector<Match> out;
    size_t start_offset = 0;
    size_t pos = 0;
    while (pos < s.size()) {
        if (!trie.first_byte[static_cast<unsigned char>(s[pos])]) {
            ++pos;
            continue;
        }
        const auto [len, token] = trie.longest_at(s, pos);
        if (token < 0) {
            ++pos;
            continue;
        }
        size_t start = pos, stop = pos + len;
        pos = stop;  // the matcher resumes after the raw match, whatever lstrip/rstrip do
        const AddedToken& t = tokens_[static_cast<size_t>(token)];
        if (t.single_word) {
            const bool start_space = start == 0 || !ends_with_word(s.substr(0, start));
            const bool stop_space = stop == s.size() || !starts_with_word(s.substr(stop));
            if (!start_space || !stop_space) continue;
        }
        if (t.lstrip) start = std::max(space_leftmost_at_end(s.substr(0, start)), start_offset);
        if (t.rstrip) stop += space_rightmost_at_start(s.substr(stop));
        if (start_offset < start) out.push_back({-1, start_offset, start});
        out.push_back({token, start, stop});
        start_offset = stop;
    }
    if (start_offset != s.size()) out.push_back({-1, start_offset, s.size()});
    return out;
}

std::vector<Segment> AddedVocabulary::extract_and_normalize(std::string_view text, const Normalizer* normalizer) const {
    std::vector<Segment> out;
    for (const Match& m : find_matches(text, raw_)) {
        if (m.end <= m.begin) continue;  // empty pieces are dropped
        if (m.token >= 0) {
            out.push_back({std::string(), tokens_[static_cast<size_t>(m.token)].id, m.begin == 0});
            continue;
        }
        std::string piece(text.substr(m.begin, m.end - m.begin));
        if (normalizer) normalizer->normalize(piece);
        for (const Match& n : find_matches(piece, normalized_)) {
            if (n.end <= n.begin) continue;
            if (n.token >= 0) {
                out.push_back({std::string(), tokens_[static_cast<size_t>(n.token)].id, false});
            } else {
                out.push_back({piece.substr(n.begin, n.end - n.begin), -1, m.begin == 0 && n.begin == 0});
            }
        }
    }
    return out;
}

}  // namespace ql::text
