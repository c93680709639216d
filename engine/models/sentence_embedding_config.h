// SPDX-License-Identifier: GPL-3.0-or-later
// How a BERT-family encoder turns token states into one sentence embedding: the
// sentence-transformers configuration of its folder (sentence_transformers/base/model.py loads
// the same files):
//   modules.json                 the module chain; QuantLab runs Transformer -> Pooling
//                                [-> Normalize] (other modules, e.g. Dense, are refused by name)
//   <pooling path>/config.json   the pooling mode(s): "pooling_mode" (a name or a list) or the
//                                legacy booleans pooling_mode_cls_token / _max_tokens /
//                                _mean_tokens / _mean_sqrt_len_tokens / _weightedmean_tokens /
//                                _lasttoken, concatenated in that order (pooling.py
//                                _LEGACY_POOLING_MODE_KWARGS); none set = mean
//   sentence_bert_config.json    max_seq_length (tokens, with [CLS]/[SEP]) and do_lower_case
// A folder without modules.json is a plain HF encoder: mean pooling, no normalisation, as
// sentence-transformers builds for it (its "Creating a new one with mean pooling" path).
// Plain C++ (facade-safe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

struct SentenceEmbeddingConfig {
    // Pooling modes in concatenation order: "cls", "max", "mean", "mean_sqrt_len_tokens",
    // "weightedmean", "lasttoken". The embedding has modes.size() * hidden_size values.
    std::vector<std::string> pooling = {"mean"};
    bool normalize = false;      // L2 normalisation (the Normalize module)
    int64_t max_seq_length = 0;  // tokens per sentence including specials; 0 = the model's positions
    bool lowercase = false;      // do_lower_case: the text is lower-cased before tokenizing
    // Where this came from: "modules.json" or "default" (no sentence-transformers files).
    std::string source = "default";
    // Folders of the module chain beside config.json ("1_Pooling", "2_Normalize"), which copies
    // of the model (checkpoints, exports) must carry along.
    std::vector<std::string> module_folders;

    // "mean", "cls+max" ...
    std::string pooling_name() const;
};

// Reads the sentence-transformers files of `folder` (a UserError names the file and key for a
// malformed file, an unknown pooling mode, a module QuantLab does not run, or a pooling dimension
// other than `hidden_size`); no modules.json = the default above.
SentenceEmbeddingConfig read_sentence_embedding_config(const std::string& folder, int64_t hidden_size);

// Copies the module folders `source`/modules.json names (1_Pooling ...) that exist into `target`
// (recursively, replacing what is there), so that a copy of the model embeds as the original
// does; the files beside config.json (modules.json itself) are the caller's to copy. Nothing
// without a modules.json; a malformed one is a UserError as above. UserError naming the folder
// when a copy fails (full disk).
void copy_sentence_module_folders(const std::string& source, const std::string& target);

}  // namespace ql
