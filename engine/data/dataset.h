// SPDX-License-Identifier: GPL-3.0-or-later
// Data named the same way everywhere (CLI --data/--calib, recipes, GUI; docs/DATA.md): a path
// (text file, folder of .txt, .npy/.bin token file, IDX image file) or a built-in spec
// ("synthetic:arith", "synthetic:arith:*", "synthetic:copy", "synthetic:random-tokens" ...),
// loaded into tensors that evaluation and training slice into batches.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/synthetic_tasks.h"

namespace ql {

// A loaded data set. Token data: inputs [N, T] int64 token ids, targets [N, T] int64 with the
// next token at scored positions and kIgnoreIndex elsewhere (padding, prompts of synthetic
// tasks). Image data: inputs [N, C, H, W] float32 in [0, 1], targets [N] int64 class labels.
struct Dataset {
    static constexpr int64_t kIgnoreIndex = -100;  // at::cross_entropy's default ignore_index

    enum class Kind { Tokens, Images };
    Kind kind = Kind::Tokens;
    std::string name;   // the spec or path it was loaded from
    DataSplit split = DataSplit::All;
    at::Tensor inputs, targets;
    // Per example: index into domain_names (synthetic tasks); undefined otherwise.
    at::Tensor domains;
    std::vector<std::string> domain_names;
    // True when every example has one answer (synthetic tasks except random tokens): exact match
    // is then defined (all scored positions right).
    bool has_answers = false;
    // Sentence data (encoders, sentence_data.h): int64 [N, T], 1 = real token, 0 = padding;
    // undefined for data without padding.
    at::Tensor attention_mask;
    // A pairs file: examples 2i and 2i + 1 are pair i's sentences, pair_scores[i] its score.
    std::vector<double> pair_scores;

    int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

// Turns text into token ids for a model; throws UserError naming `source` on failure.
using TextEncoder = std::function<std::vector<int64_t>(const std::string& text, const std::string& source)>;

// Turns one sentence into token ids with the model's special tokens, at most max_tokens of them
// (the text's tokens are cut, the special tokens kept); UserError naming `source` on failure.
using SentenceEncoder =
    std::function<std::vector<int64_t>(const std::string& text, const std::string& source, int64_t max_tokens)>;

// What the model that will consume the data needs.
struct DataContext {
    int64_t vocab_size = 0;      // token ids must be < this (0: images)
    int64_t max_positions = 0;   // longest sequence the model takes
    TextEncoder encode_text;     // empty: text data is refused with a UserError
    int64_t eos_id = -1;         // appended after every text document when >= 0
    int64_t bos_id = -1;         // TextWindows::Llama: the BOS that starts each chunk when add_bos
    bool add_bos = false;
    std::string model_name;      // for messages
    // Encoders: text files are read as sentences, one per line (or pairs files), each encoded by
    // encode_sentence into at most sentence_length tokens and padded with pad_id.
    SentenceEncoder encode_sentence;
    int64_t sentence_length = 0;
    int64_t pad_id = 0;
};

// How a token stream (text, a flat token file) is cut into windows and which positions are
// scored (docs/DATA.md "Perplexity windows"). T = DataOptions::sequence_length.
//   QuantLab   windows of T + 1 tokens starting every T tokens: each token after the first is
//              predicted once, with the previous tokens of its window as context. Documents end
//              with the model's end-of-text token.
//   Fixed      transformers' fixed-length windows (its perplexity guide): windows of T tokens
//              starting every `stride` tokens (0 = T), the tail that fills no window dropped; the
//              first window scores its T - 1 predictions, later ones only the predictions of their
//              last `stride` tokens (all T - 1 when stride = T). No BOS; documents are separated by
//              the end-of-text token, none after the last.
//   Llama      llama.cpp's llama-perplexity: non-overlapping chunks of T tokens (tail dropped),
//              the chunk's first token replaced by BOS when the model adds one (DataContext::
//              add_bos), and only the second half scored: positions T/2 .. T-2 predicting the
//              next token (T - 1 - T/2 predictions a chunk). Documents as Fixed.
struct TextWindows {
    enum class Kind { QuantLab, Fixed, Llama };
    Kind kind = Kind::QuantLab;
    int64_t stride = 0;  // Fixed only
};
// "quantlab" | "hf" | "llama"; UserError otherwise.
TextWindows::Kind parse_text_windows(const std::string& name);
const char* text_windows_name(TextWindows::Kind kind);

struct DataOptions {
    // Unset: validation for synthetic tasks (held-out problems), all for files.
    std::optional<DataSplit> split;
    // Examples / windows / images to use (0 = default: 1500 synthetic problems, 256 random-token
    // sequences, every window / image of a file). Synthetic examples cycle through the domains.
    int64_t samples = 0;
    uint64_t seed = 0;             // synthetic problems and random tokens
    int64_t sequence_length = 0;   // window length T for text and token streams, random tokens
                                   // (0 = min(max_positions, 256); random tokens min(.., 64));
                                   // sentences: tokens per sentence (0 = the encoder's length)
    std::string token_dtype;       // nanoGPT .bin files: "uint16" | "uint32" ("" = infer)
    TextWindows windows;           // text and flat token files
};

Dataset load_dataset(const std::string& spec, const DataOptions& options, const DataContext& context);

// Calibration data (PTQ, and the PTQ that starts QAT/QAD): load_dataset, except that a file's data,
// which have no seed of their own, give `options.samples` rows drawn by a non-zero
// `options.seed` from the whole of `options.split` (draw_rows) instead of its first rows, so
// that an experiment's replicates calibrate on different samples. Synthetic data are made from
// the seed as by load_dataset.
Dataset load_calibration_dataset(const std::string& spec, const DataOptions& options, const DataContext& context);

// Synthetic problems as tensors (answers scored only): problems first .. first + count - 1 of
// the stream; problem i is of domain i % k and that domain's problem i / k (k domains). A domain
// listed r times takes r of every k slots (a weighted mix; its problems are numbered across its
// slots, domain_names stays unique). Padded with <pad> to the longest domain. Training reads
// consecutive ranges of one stream.
Dataset make_synthetic_dataset(const std::vector<SyntheticDomain>& domains, DataSplit split, uint64_t seed,
                               int64_t count, int64_t first = 0);

// `count` sequences of `length` + 1 uniform random ids in [0, vocab_size), every next token
// scored. Train and validation use different streams of the same seed.
Dataset make_random_token_dataset(int64_t vocab_size, int64_t length, DataSplit split, uint64_t seed, int64_t count);

// The sentence form of random tokens, for encoders ("synthetic:random-tokens" given to a BERT):
// `count` sentences of `length` tokens, the model's special tokens around length minus their
// number of ids drawn as make_random_token_dataset draws them (uniform in [0, vocab_size)).
// The special tokens are those context.encode_sentence puts around an empty sentence ([CLS] and
// [SEP]: the first before, the rest after). Attention mask all ones, no scored targets.
Dataset make_random_sentence_dataset(const DataContext& context, int64_t length, DataSplit split, uint64_t seed,
                                     int64_t count);

// A token stream cut into windows of length + 1 tokens with stride `length` (every token but
// the first is predicted once). Split: the last max(1, n/10) of n >= 2 windows are validation,
// the rest train. `source` names the file in errors.
Dataset make_window_dataset(const std::vector<int64_t>& tokens, int64_t length, DataSplit split,
                            const std::string& source);

// A token stream cut as `windows` says (windows.kind QuantLab: make_window_dataset), split by
// windows like make_window_dataset. UserError naming `source` when no window fits.
Dataset make_text_windows(const std::vector<int64_t>& tokens, int64_t length, const TextWindows& windows,
                          const DataContext& context, DataSplit split, const std::string& source);

// Rows [start, start + count) of a data set (a view; all fields sliced alike). Padded sentence
// data lose the padding columns that no row of the slice uses. pair_scores are not sliced (a
// slice is a batch of sentences).
Dataset slice_dataset(const Dataset& d, int64_t start, int64_t count);

// The rows of `d` at `rows` (int64 indices, in that order; all fields alike, pair_scores dropped as
// by slice_dataset, padding no row uses trimmed): a copy, not a view.
Dataset select_rows(const Dataset& d, const at::Tensor& rows);

// `count` rows of `d` drawn without replacement by `seed`, kept in their order in `d` (all fields
// alike; pair_scores dropped as by slice_dataset): a seeded calibration subset of a file's data,
// so that replicate seeds of an experiment calibrate on different samples. seed 0, count <= 0
// or count >= d.size() gives the first `count` rows (all of them for count <= 0), as before.
Dataset draw_rows(const Dataset& d, int64_t count, uint64_t seed);

// Padded sentence data without the trailing columns that no row uses (a view); other data as is.
Dataset trim_padding(const Dataset& d);

}  // namespace ql
