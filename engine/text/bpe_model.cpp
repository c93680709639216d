// SPDX-License-Identifier: GPL-3.0-or-later
// The BPE model of tokenizer.json (tokenizers/src/models/bpe/{model,word}.rs): characters are
// looked up in the vocabulary (byte fallback to <0xXX> tokens, else the unknown token, fused
// when fuse_unk), then adjacent pairs are merged lowest rank first, leftmost first among equal
// ranks, with a priority queue over a linked list of symbols (O(n log n) per pre-token: Llama 2
// style files have no pre-tokenizer, so a whole line is one pre-token). Results are cached per
// pre-token.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/errors.h"
#include "engine/text/unicode_text.h"
#include "engine/text/vocabulary.h"

namespace ql::text {

Vocabulary::Vocabulary(const Json& j, const JsonPath& at) {
    if (!j.is_object()) at.fail("expected an object {\"token\": id, ...}");
    storage_.reserve(j.size());
    ids_.reserve(j.size());
    int64_t max_id = -1;
    for (const auto& [key, value] : j.items()) {
        if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= (int64_t{1} << 24))
            (at / key).fail("expected a token id in [0, 2^24)");
        if (valid_utf8_prefix(key) != key.size()) (at / key).fail("token is not valid UTF-8");
        storage_.push_back(key);
        max_id = std::max(max_id, value.get<int64_t>());
    }
    by_id_.assign(static_cast<size_t>(max_id + 1), nullptr);
    size_t k = 0;
    for (const auto& [key, value] : j.items()) {
        const auto id = static_cast<int32_t>(value.get<int64_t>());
        ids_[storage_[k]] = id;
        by_id_[id] = &storage_[k];
        ++k;
    }
}

namespace {

struct MergeValue {
    uint32_t rank;
    int32_t new_id;
};

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

class BpeModel final : public TokenizerModel {
public:
    BpeModel(const Json& j, const JsonPath& at);
    void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
    std::optional<int32_t> token_to_id(std::string_view token) const override { return vocab_.id(token); }
    const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
    size_t size() const override { return vocab_.size(); }
    int32_t max_id() const override { return vocab_.max_id(); }
    std::string type() const override { return "BPE"; }
    std::optional<std::string> unk_token() const override { return unk_token_; }
    size_t merges() const override { return merges_.size(); }
    bool byte_fallback() const override { return byte_fallback_; }

private:
    void merge_word(const std::string& w, std::vector<int32_t>& out) const;
    int32_t unk_id() const;

    std::string file_;
    Vocabulary vocab_;
    std::unordered_map<uint64_t, MergeValue> merges_;
    std::optional<std::string> unk_token_, prefix_, suffix_;
    bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
    int32_t byte_ids_[256];

    // Cached: up to this many pre-tokens of at most kCacheMaxBytes (long ones, such as whole
    // lines of a file without pre-tokenizer, rarely repeat).
    static constexpr size_t kCacheCapacity = 200000;
    static constexpr size_t kCacheMaxBytes = 256;
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

BpeModel::BpeModel(const Json& j, const JsonPath& at) : file_(at.file()), vocab_(at.require(j, "vocab"), at / "vocab") {
    unk_token_ = at.optional_string(j, "unk_token");
    prefix_ = at.optional_string(j, "continuing_subword_prefix");
    suffix_ = at.optional_string(j, "end_of_word_suffix");
    fuse_unk_ = at.boolean(j, "fuse_unk", false);
    byte_fallback_ = at.boolean(j, "byte_fallback", false);
    ignore_merges_ = at.boolean(j, "ignore_merges", false);
    if (j.contains("dropout") && !j["dropout"].is_null()) {
        if (!j["dropout"].is_number()) (at / "dropout").fail("expected a number or null");
        const double p = j["dropout"].get<double>();
        if (p < 0.0 || p > 1.0) (at / "dropout").fail("must be in [0, 1]");
        // Dropout is a training-time regularizer; encoding for evaluation uses none.
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        byte_ids_[b] = vocab_.find(name);
    }
    const Json& merges = at.array(j, "merges");
    const JsonPath mat = at / "merges";
    const size_t prefix_len = prefix_ ? prefix_->size() : 0;
    merges_.reserve(merges.size());
    uint32_t rank = 0;
    for (size_t i = 0; i < merges.size(); ++i) {
        const Json& m = merges[i];
        std::string a, b;
        if (m.is_string()) {
            const std::string line = m.get<std::string>();
            if (line.rfind("#version", 0) == 0) continue;
            const size_t sp = line.find(' ');
            if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
                mat[i].fail("expected \"left right\" with exactly one space, got '" + line + "'");
            a = line.substr(0, sp);
            b = line.substr(sp + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            a = m[0].get<std::string>();
            b = m[1].get<std::string>();
        } else {
            mat[i].fail("expected \"left right\" or [\"left\", \"right\"]");
        }
        const int32_t ida = vocab_.find(a), idb = vocab_.find(b);
        if (ida < 0) mat[i].fail("merge token '" + a + "' is not in the vocabulary");
        if (idb < 0) mat[i].fail("merge token '" + b + "' is not in the vocabulary");
        if (b.size() < prefix_len) mat[i].fail("merge token '" + b + "' is shorter than continuing_subword_prefix");
        const std::string merged = a + b.substr(prefix_len);
        const int32_t idm = vocab_.find(merged);
        if (idm < 0) mat[i].fail("merged token '" + merged + "' is not in the vocabulary");
        merges_[pair_key(ida, idb)] = MergeValue{rank, idm};  // a repeated pair keeps its last rank, as in HF
        ++rank;
    }
}

int32_t BpeModel::unk_id() const {
    const int32_t id = vocab_.find(*unk_token_);
    if (id < 0) throw UserError(file_ + ": tokenizer.json field 'model.unk_token': '" + *unk_token_ + "' is not in the vocabulary");
    return id;
}

void BpeModel::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
    if (piece.empty()) return;
    if (ignore_merges_) {
        const int32_t id = vocab_.find(piece);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    const bool cacheable = piece.size() <= kCacheMaxBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        const auto it = cache_.find(piece);
        if (it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int32_t> ids;
    merge_word(piece, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    if (!cacheable) return;
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(piece, std::move(ids));
}

void BpeModel::merge_word(const std::string& w, std::vector<int32_t>& out) const {
    struct Symbol {
        int32_t id;
        int32_t prev, next;
        uint32_t len;  // bytes of the input it covers; 0 once merged into its left neighbour
    };
    std::vector<Symbol> symbols;
    symbols.reserve(w.size());
    auto add = [&](int32_t id, uint32_t len) {
        const auto n = static_cast<int32_t>(symbols.size());
        if (n > 0) symbols.back().next = n;
        symbols.push_back({id, n - 1, -1, len});
    };
    int32_t pending_unk = -1;
    uint32_t pending_unk_len = 0;
    std::string buffer;
    size_t i = 0;
    while (i < w.size()) {
        const size_t begin = i;
        next_code_point(w, i);
        const bool first = begin == 0, last = i == w.size();
        const auto byte_len = static_cast<uint32_t>(i - begin);
        std::string_view s(w.data() + begin, byte_len);
        if ((prefix_ && !first) || (suffix_ && last)) {
            buffer.clear();
            if (prefix_ && !first) buffer += *prefix_;
            buffer.append(s.data(), s.size());
            if (suffix_ && last) buffer += *suffix_;
            s = buffer;
        }
        const int32_t id = vocab_.find(s);
        if (id >= 0) {
            if (pending_unk >= 0) {
                add(pending_unk, pending_unk_len);
                pending_unk = -1;
            }
            add(id, byte_len);
            continue;
        }
        if (byte_fallback_) {
            bool all = true;
            for (unsigned char b : s) all = all && byte_ids_[b] >= 0;
            if (all) {
                for (unsigned char b : s) add(byte_ids_[b], 1);
                continue;
            }
        }
        if (unk_token_) {
            if (pending_unk >= 0 && fuse_unk_) {
                pending_unk_len += byte_len;
            } else {
                if (pending_unk >= 0) add(pending_unk, pending_unk_len);
                pending_unk = unk_id();
                pending_unk_len = byte_len;
            }
        }
    }
    if (pending_unk >= 0) add(pending_unk, pending_unk_len);

    struct Candidate {
        uint32_t rank;
        int32_t pos;
        int32_t new_id;
        bool operator<(const Candidate& o) const {  // std::priority_queue pops the largest: invert
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    std::priority_queue<Candidate> queue;
    auto lookup = [&](int32_t a, int32_t b) -> const MergeValue* {
        const auto it = merges_.find(pair_key(a, b));
        return it == merges_.end() ? nullptr : &it->second;
    };
    for (size_t k = 0; k + 1 < symbols.size(); ++k)
        if (const MergeValue* m = lookup(symbols[k].id, symbols[k + 1].id)) queue.push({m->rank, static_cast<int32_t>(k), m->new_id});
    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& cur = symbols[top.pos];
        if (cur.len == 0 || cur.next == -1) continue;
        const Symbol right = symbols[cur.next];
        const MergeValue* m = lookup(cur.id, right.id);
        if (!m || m->new_id != top.new_id) continue;  // stale entry
        symbols[cur.next].len = 0;
        cur.id = top.new_id;
        cur.len += right.len;
        cur.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = top.pos;
        if (cur.prev >= 0)
            if (const MergeValue* p = lookup(symbols[cur.prev].id, cur.id)) queue.push({p->rank, cur.prev, p->new_id});
        if (cur.next >= 0)
            if (const MergeValue* n = lookup(cur.id, symbols[cur.next].id)) queue.push({n->rank, top.pos, n->new_id});
    }
    for (const Symbol& s : symbols)
        if (s.len != 0) out.push_back(s.id);
}

}  // namespace

std::unique_ptr<TokenizerModel> make_bpe_model(const Json& j, const JsonPath& at) { return std::make_unique<BpeModel>(j, at); }

}  // namespace ql::text
