// SPDX-License-Identifier: GPL-3.0-or-later
// Sentence data for encoders (docs/DATA.md "Sentences"): text read one sentence per line, pairs
// files for similarity scores, and their tokenised, padded form. Each sentence becomes
// [CLS] tokens [SEP] (the tokenizer's post-processor), cut to the model's sentence length as
// sentence-transformers cuts it (the text's tokens first, the special tokens kept).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace ql {

// One line of a text source.
struct SentenceLine {
    std::string text;    // without the line end (\n, \r\n)
    std::string source;  // the file
    int64_t line = 0;    // 1-based
};

// Every line of a text file or folder of .txt files (text_corpus.h order). Blank lines (only
// whitespace) are dropped unless keep_blank; a final line end does not start another line.
std::vector<SentenceLine> read_sentence_lines(const std::string& path, bool keep_blank);

// A line range of a sentence file, "FILE#lines=A-B": its lines A to B (1-based, inclusive, as
// SentenceLine::line counts them; blank lines in the range are dropped as usual). It is the
// sentences of one part of a corpus (the data-robustness study trains on a part). nullopt for a
// spec without "#lines="; UserError naming the spec for a malformed range (A < 1, B < A).
struct SentenceLineRange {
    std::string path;
    int64_t first = 0, last = 0;
};
std::optional<SentenceLineRange> parse_sentence_line_range(const std::string& spec);

// A pairs file: "sentence1<TAB>sentence2<TAB>score" per line (STS-benchmark style; blank lines
// and lines starting with '#' are skipped). A file is one when its first such line has exactly
// two tabs and a finite number after the second.
struct SentencePair {
    std::string first, second;
    double score = 0;
};
bool is_pairs_file(const std::string& path);
// UserError naming file and line for a line without exactly three fields, a score that is not a
// finite number, an empty sentence, or fewer than two pairs (Spearman needs them).
std::vector<SentencePair> read_sentence_pairs(const std::string& path);

// Sentences as a padded token data set: inputs [N, T] (pad_id after each sentence's tokens),
// attention_mask [N, T] int64 (1 = real token), targets [N, T] all Dataset::kIgnoreIndex; T = the
// longest sentence. `encode` turns a sentence into its ids with special tokens, at most
// max_tokens of them.
Dataset make_sentence_dataset(const std::vector<std::string>& sentences, const SentenceEncoder& encode,
                              int64_t max_tokens, int64_t pad_id, const std::string& source);

// Masked-LM evaluation data (docs/DATA.md "Masked LM"): of every sentence's real tokens except
// the first and the last ([CLS], [SEP]), those whose uniform draw u < 0.15 become mask_id and are
// scored against the original token (targets); at least one per sentence of three or more tokens
// (the middle one when the draw picked none). u = mix64(mix64(seed) ^ mix64(row << 32 | position))
// / 2^64 with row the sentence's index in `sentences` and mix64 splitmix64 (synthetic_tasks.h),
// so a script can reproduce the positions.
Dataset make_masked_lm_dataset(const Dataset& sentences, int64_t mask_id, uint64_t seed);

}  // namespace ql
