// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/sentence_data.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/data/text_corpus.h"
#include "engine/io/whole_file.h"

namespace ql {
namespace {

bool blank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; });
}

// The lines of `text`: split at \n, a trailing \r dropped, no empty line after a final \n.
std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    size_t begin = 0;
    while (begin < text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(begin, end - begin);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(std::move(line));
        begin = end + 1;
    }
    return lines;
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> fields;
    size_t begin = 0;
    for (;;) {
        const size_t tab = line.find('\t', begin);
        fields.push_back(line.substr(begin, tab == std::string::npos ? std::string::npos : tab - begin));
        if (tab == std::string::npos) return fields;
        begin = tab + 1;
    }
}

// A finite number filling the whole field (surrounding spaces allowed).
bool parse_score(const std::string& field, double& out) {
    const size_t a = field.find_first_not_of(" \r");
    if (a == std::string::npos) return false;
    const size_t b = field.find_last_not_of(" \r");
    const std::string s = field.substr(a, b - a + 1);
    char* end = nullptr;
    errno = 0;
    out = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && errno == 0 && std::isfinite(out);
}

bool skipped_pairs_line(const std::string& line) { return blank(line) || line[line.find_first_not_of(" \t")] == '#'; }

}  // namespace

std::vector<SentenceLine> read_sentence_lines(const std::string& path, bool keep_blank) {
    std::vector<SentenceLine> out;
    for (const TextDocument& d : read_text_documents(path)) {
        const std::vector<std::string> lines = split_lines(d.text);
        for (size_t i = 0; i < lines.size(); ++i)
            if (keep_blank || !blank(lines[i])) out.push_back({lines[i], d.path, static_cast<int64_t>(i + 1)});
    }
    return out;
}

bool is_pairs_file(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return false;
    for (const std::string& line : split_lines(read_whole_file(path, "text file"))) {
        if (skipped_pairs_line(line)) continue;
        const std::vector<std::string> f = split_tabs(line);
        double score = 0;
        return f.size() == 3 && parse_score(f[2], score);
    }
    return false;
}

std::vector<SentencePair> read_sentence_pairs(const std::string& path) {
    std::vector<SentencePair> pairs;
    const std::vector<std::string> lines = split_lines(read_whole_file(path, "pairs file"));
    for (size_t i = 0; i < lines.size(); ++i) {
        if (skipped_pairs_line(lines[i])) continue;
        const std::string at = path + ":" + std::to_string(i + 1) + ": ";
        const std::vector<std::string> f = split_tabs(lines[i]);
        if (f.size() != 3)
            throw UserError(at + "expected sentence1<TAB>sentence2<TAB>score, got " + std::to_string(f.size()) + " field(s)");
        SentencePair p{f[0], f[1], 0};
        if (!parse_score(f[2], p.score)) throw UserError(at + "the score '" + f[2] + "' is not a finite number");
        if (blank(p.first) || blank(p.second)) throw UserError(at + "an empty sentence");
        pairs.push_back(std::move(p));
    }
    if (pairs.size() < 2)
        throw UserError(path + ": " + std::to_string(pairs.size()) + " pair(s); a rank correlation needs at least 2");
    return pairs;
}

Dataset make_sentence_dataset(const std::vector<std::string>& sentences, const SentenceEncoder& encode,
                              int64_t max_tokens, int64_t pad_id, const std::string& source) {
    if (!encode) throw UserError(source + ": the model cannot encode sentences");
    std::vector<std::vector<int64_t>> ids;
    ids.reserve(sentences.size());
    int64_t longest = 1;
    for (const std::string& s : sentences) {
        ids.push_back(encode(s, source, max_tokens));
        longest = std::max<int64_t>(longest, static_cast<int64_t>(ids.back().size()));
    }
    const auto n = static_cast<int64_t>(sentences.size());
    at::Tensor inputs = at::full({n, longest}, pad_id, at::kLong);
    at::Tensor mask = at::zeros({n, longest}, at::kLong);
    auto in = inputs.accessor<int64_t, 2>();
    auto m = mask.accessor<int64_t, 2>();
    for (int64_t i = 0; i < n; ++i)
        for (size_t j = 0; j < ids[static_cast<size_t>(i)].size(); ++j) {
            in[i][static_cast<int64_t>(j)] = ids[static_cast<size_t>(i)][j];
            m[i][static_cast<int64_t>(j)] = 1;
        }
    Dataset d;
    d.kind = Dataset::Kind::Tokens;
    d.name = source;
    d.inputs = inputs;
    d.attention_mask = mask;
    d.targets = at::full({n, longest}, Dataset::kIgnoreIndex, at::kLong);
    return d;
}

Dataset make_masked_lm_dataset(const Dataset& sentences, int64_t mask_id, uint64_t seed) {
    if (!sentences.attention_mask.defined()) throw UserError(sentences.name + ": masked-LM data need sentences");
    Dataset d = sentences;
    d.inputs = sentences.inputs.clone();
    d.targets = at::full_like(sentences.inputs, Dataset::kIgnoreIndex);
    const uint64_t key = mix64(seed);
    auto in = d.inputs.accessor<int64_t, 2>();
    auto tg = d.targets.accessor<int64_t, 2>();
    const at::Tensor lengths = sentences.attention_mask.ne(0).sum(1).to(at::kLong).contiguous();
    const int64_t* len = lengths.data_ptr<int64_t>();
    for (int64_t row = 0; row < d.size(); ++row) {
        if (len[row] < 3) continue;
        int64_t picked = 0;
        for (int64_t pos = 1; pos + 1 < len[row]; ++pos) {
            const uint64_t draw = mix64(key ^ mix64(static_cast<uint64_t>(row) << 32 | static_cast<uint64_t>(pos)));
            // u < 0.15 with u = draw / 2^64.
            if (static_cast<double>(draw) / 18446744073709551616.0 < 0.15) {
                tg[row][pos] = in[row][pos];
                in[row][pos] = mask_id;
                ++picked;
            }
        }
        if (picked == 0) {
            const int64_t pos = len[row] / 2;
            tg[row][pos] = in[row][pos];
            in[row][pos] = mask_id;
        }
    }
    return d;
}

std::optional<SentenceLineRange> parse_sentence_line_range(const std::string& spec) {
    const std::string tag = "#lines=";
    const size_t at = spec.rfind(tag);
    if (at == std::string::npos) return std::nullopt;
    SentenceLineRange r;
    r.path = spec.substr(0, at);
    const std::string range = spec.substr(at + tag.size());
    const size_t dash = range.find('-');
    const auto number = [&](const std::string& text) -> int64_t {
        if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos)
            throw UserError("data '" + spec + "': the line range must be #lines=A-B with line numbers A <= B (1-based), got '" +
                            range + "'");
        return std::stoll(text);
    };
    if (dash == std::string::npos) number("");
    r.first = number(range.substr(0, dash));
    r.last = number(range.substr(dash + 1));
    if (r.path.empty() || r.first < 1 || r.last < r.first)
        throw UserError("data '" + spec + "': the line range must be FILE#lines=A-B with 1 <= A <= B, got '" + range + "'");
    return r;
}

}  // namespace ql
