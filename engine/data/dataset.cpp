// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/dataset.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <filesystem>

#include "engine/core/allocation_limit.h"
#include "engine/core/errors.h"
#include "engine/core/nd_array.h"
#include "engine/data/idx_file.h"
#include "engine/data/sentence_data.h"
#include "engine/data/text_corpus.h"
#include "engine/data/token_file.h"

namespace ql {
namespace {

at::Tensor long_tensor(const std::vector<int64_t>& v, std::vector<int64_t> shape) {
    return at::from_blob(const_cast<int64_t*>(v.data()), shape, at::kLong).clone();
}

// Files: the last max(1, n/10) of n >= 2 items are validation.
std::pair<int64_t, int64_t> split_range(int64_t n, DataSplit split, const std::string& source) {
    const int64_t n_val = n >= 2 ? std::max<int64_t>(1, n / 10) : 0;
    switch (split) {
        case DataSplit::All: return {0, n};
        case DataSplit::Train: return {0, n - n_val};
        case DataSplit::Validation:
            if (n_val == 0)
                throw UserError(source + ": " + std::to_string(n) +
                                " item(s) are too few for a validation split (needs at least 2); use --split all");
            return {n - n_val, n};
    }
    return {0, n};
}

Dataset take(Dataset d, int64_t samples) {
    if (samples > 0 && samples < d.size()) return slice_dataset(d, 0, samples);
    return d;
}

Dataset window_rows(const std::vector<int64_t>& tokens, int64_t rows, int64_t columns, DataSplit split,
                    const std::string& source) {
    if (columns < 2) throw UserError(source + ": sequences need at least 2 tokens, got " + std::to_string(columns));
    const auto [begin, end] = split_range(rows, split, source);
    const at::Tensor all = long_tensor(tokens, {rows, columns});
    Dataset d;
    d.kind = Dataset::Kind::Tokens;
    d.name = source;
    d.split = split;
    d.inputs = all.slice(0, begin, end).slice(1, 0, columns - 1).contiguous();
    d.targets = all.slice(0, begin, end).slice(1, 1, columns).contiguous();
    return d;
}

Dataset load_images(const std::string& path, DataSplit split) {
    const std::string labels_path = idx_labels_path_for(path);
    std::error_code ec;
    if (labels_path.empty() || !std::filesystem::exists(labels_path, ec))
        throw UserError(path + ": no labels file for these images (expected " +
                        (labels_path.empty() ? std::string("a name with 'images' in it, e.g. train-images-idx3-ubyte")
                                             : labels_path) +
                        ")");
    IdxArray images = read_idx(path);
    const IdxArray labels = read_idx(labels_path);
    if (images.dims.size() != 3 && images.dims.size() != 4)
        throw UserError(path + ": images must have 3 dimensions [N, H, W] or 4 [N, C, H, W], got " +
                        std::to_string(images.dims.size()));
    if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0])
        throw UserError(labels_path + ": expected " + std::to_string(images.dims[0]) + " labels (one per image in " +
                        path + "), got shape " + shape_string(labels.dims));
    std::vector<int64_t> shape = images.dims;
    if (shape.size() == 3) shape.insert(shape.begin() + 1, 1);
    const int64_t n = shape[0];
    const auto [begin, end] = split_range(n, split, path);
    const at::Tensor x = at::from_blob(images.data.data(), shape, at::kByte);
    const at::Tensor y = at::from_blob(const_cast<uint8_t*>(labels.data.data()), {n}, at::kByte);
    Dataset d;
    d.kind = Dataset::Kind::Images;
    d.name = path;
    d.split = split;
    d.inputs = x.slice(0, begin, end).to(at::kFloat).div_(255.0f);
    d.targets = y.slice(0, begin, end).to(at::kLong);
    return d;
}

// Encoders: one sentence per non-blank line, or a pairs file (always whole: it is an evaluation
// set, its split and sample options do not apply).
Dataset load_sentences(const std::string& spec, const DataOptions& options, const DataContext& context) {
    const int64_t length = options.sequence_length > 0 ? options.sequence_length : context.sentence_length;
    if (length < 2)
        throw UserError("data '" + spec + "': sentences need at least 2 tokens ([CLS] and [SEP]), got a length of " +
                        std::to_string(length));
    const std::optional<SentenceLineRange> range = parse_sentence_line_range(spec);
    const std::string path = range ? range->path : spec;
    if (range && is_pairs_file(path))
        throw UserError("data '" + spec + "': a pairs file is an evaluation set and is read whole (no #lines= range)");
    if (!range && is_pairs_file(spec)) {
        const std::vector<SentencePair> pairs = read_sentence_pairs(spec);
        std::vector<std::string> sentences;
        std::vector<double> scores;
        for (const SentencePair& p : pairs) {
            sentences.push_back(p.first);
            sentences.push_back(p.second);
            scores.push_back(p.score);
        }
        Dataset d = make_sentence_dataset(sentences, context.encode_sentence, length, context.pad_id, spec);
        d.pair_scores = std::move(scores);
        return d;
    }
    std::vector<SentenceLine> lines = read_sentence_lines(path, /*keep_blank=*/false);
    if (range) {
        const int64_t last_line = lines.empty() ? 0 : lines.back().line;
        if (range->last > last_line)
            throw UserError("data '" + spec + "': line " + std::to_string(range->last) + " is past the last sentence of " + path +
                            " (line " + std::to_string(last_line) + ")");
        std::vector<SentenceLine> kept;
        for (SentenceLine& l : lines)
            if (l.line >= range->first && l.line <= range->last) kept.push_back(std::move(l));
        lines = std::move(kept);
    }
    if (lines.empty()) throw UserError(spec + ": no sentences (every line is blank)");
    const DataSplit split = options.split.value_or(DataSplit::All);
    auto [begin, end] = split_range(static_cast<int64_t>(lines.size()), split, spec);
    if (options.samples > 0) end = std::min(end, begin + options.samples);
    std::vector<std::string> sentences;
    for (int64_t i = begin; i < end; ++i) sentences.push_back(lines[static_cast<size_t>(i)].text);
    Dataset d = make_sentence_dataset(sentences, context.encode_sentence, length, context.pad_id, spec);
    d.split = split;
    return d;
}

}  // namespace

Dataset make_synthetic_dataset(const std::vector<SyntheticDomain>& domains, DataSplit split, uint64_t seed,
                               int64_t count, int64_t first) {
    const auto k = static_cast<int64_t>(domains.size());
    // A domain listed r times gets r slots of every k problems; its problems are numbered across
    // its slots, so repeats weight a domain without repeating problems.
    Dataset d;
    std::vector<int64_t> slot_domain(k), slot_rank(k), repeats(k);
    for (int64_t j = 0; j < k; ++j) {
        const std::string name = domain_name(domains[j]);
        const auto it = std::find(d.domain_names.begin(), d.domain_names.end(), name);
        slot_domain[j] = it - d.domain_names.begin();
        if (it == d.domain_names.end()) d.domain_names.push_back(name);
        slot_rank[j] = std::count(domains.begin(), domains.begin() + j, domains[j]);
        repeats[j] = std::count(domains.begin(), domains.end(), domains[j]);
    }
    int64_t max_len = 0;
    for (auto dom : domains) max_len = std::max(max_len, max_example_length(dom));
    const int64_t t = max_len - 1;
    std::vector<int64_t> inputs(count * t, synthetic_vocab::kPad), targets(count * t, Dataset::kIgnoreIndex),
        domain(count);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t problem = first + i, j = problem % k;
        const auto index = static_cast<uint64_t>(problem / k * repeats[j] + slot_rank[j]);
        const SyntheticExample e = generate_example(domains[j], split, seed, index);
        const auto len = static_cast<int64_t>(e.tokens.size());
        for (int64_t p = 0; p + 1 < len; ++p) {
            inputs[i * t + p] = e.tokens[p];
            if (p + 1 >= e.answer_begin) targets[i * t + p] = e.tokens[p + 1];
        }
        domain[i] = slot_domain[j];
    }
    d.kind = Dataset::Kind::Tokens;
    d.split = split;
    d.inputs = long_tensor(inputs, {count, t});
    d.targets = long_tensor(targets, {count, t});
    d.domains = long_tensor(domain, {count});
    d.has_answers = true;
    return d;
}

Dataset make_random_token_dataset(int64_t vocab_size, int64_t length, DataSplit split, uint64_t seed, int64_t count) {
    const uint64_t key = mix64(mix64(seed) ^ (split == DataSplit::Validation ? 0x7A11DA7EULL : 0x7EA1ULL));
    std::vector<int64_t> tokens(count * (length + 1));
    for (size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = static_cast<int64_t>(mix64(key ^ mix64(i)) % static_cast<uint64_t>(vocab_size));
    Dataset d = window_rows(tokens, count, length + 1, DataSplit::All, "synthetic:random-tokens");
    d.split = split;
    return d;
}

Dataset make_random_sentence_dataset(const DataContext& context, int64_t length, DataSplit split, uint64_t seed,
                                     int64_t count) {
    const std::string source = "synthetic:random-tokens";
    if (!context.encode_sentence) throw UserError("data '" + source + "': random sentences need a sentence encoder's tokenizer");
    const std::vector<int64_t> specials = context.encode_sentence("", source, length);
    const int64_t middle = length - static_cast<int64_t>(specials.size());
    if (middle < 1)
        throw UserError("data '" + source + "': sentences of " + std::to_string(length) + " tokens leave no room beside the " +
                        std::to_string(specials.size()) + " special tokens");
    const Dataset random = make_random_token_dataset(context.vocab_size, middle, split, seed, count);
    std::vector<at::Tensor> parts;
    const auto column = [&](int64_t id) { return at::full({count, 1}, id, at::kLong); };
    if (!specials.empty()) parts.push_back(column(specials.front()));
    parts.push_back(random.inputs.slice(1, 0, middle));
    for (size_t i = 1; i < specials.size(); ++i) parts.push_back(column(specials[i]));
    Dataset d;
    d.kind = Dataset::Kind::Tokens;
    d.name = source;
    d.split = split;
    d.inputs = at::cat(parts, 1).contiguous();
    d.attention_mask = at::ones_like(d.inputs);
    d.targets = at::full_like(d.inputs, Dataset::kIgnoreIndex);
    return d;
}

Dataset make_window_dataset(const std::vector<int64_t>& tokens, int64_t length, DataSplit split,
                            const std::string& source) {
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    const int64_t n = n_tokens >= 1 ? (n_tokens - 1) / length : 0;
    if (n == 0)
        throw UserError(source + ": " + std::to_string(n_tokens) + " tokens are fewer than one window of " +
                        std::to_string(length + 1) + " (sequence length " + std::to_string(length) +
                        "); use a shorter --seq-len");
    std::vector<int64_t> windows(n * (length + 1));
    for (int64_t w = 0; w < n; ++w)
        std::copy_n(tokens.begin() + w * length, length + 1, windows.begin() + w * (length + 1));
    return window_rows(windows, n, length + 1, split, source);
}

TextWindows::Kind parse_text_windows(const std::string& name) {
    if (name == "quantlab") return TextWindows::Kind::QuantLab;
    if (name == "hf" || name == "transformers") return TextWindows::Kind::Fixed;
    if (name == "llama" || name == "llama.cpp") return TextWindows::Kind::Llama;
    throw UserError("windows '" + name + "' is not one of quantlab, hf, llama");
}

const char* text_windows_name(TextWindows::Kind kind) {
    switch (kind) {
        case TextWindows::Kind::QuantLab: return "quantlab";
        case TextWindows::Kind::Fixed: return "hf";
        case TextWindows::Kind::Llama: return "llama";
    }
    return "?";
}

Dataset make_text_windows(const std::vector<int64_t>& tokens, int64_t length, const TextWindows& w,
                          const DataContext& context, DataSplit split, const std::string& source) {
    if (w.kind == TextWindows::Kind::QuantLab) return make_window_dataset(tokens, length, split, source);
    if (length < 2) throw UserError(source + ": windows need at least 2 tokens, got " + std::to_string(length));
    const int64_t stride = w.kind == TextWindows::Kind::Fixed && w.stride > 0 ? w.stride : length;
    if (stride > length)
        throw UserError(source + ": the stride " + std::to_string(stride) + " is longer than the window " + std::to_string(length));
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    const int64_t n = n_tokens >= length ? (n_tokens - length) / stride + 1 : 0;
    if (n == 0)
        throw UserError(source + ": " + std::to_string(n_tokens) + " tokens are fewer than one window of " +
                        std::to_string(length) + "; use a shorter --seq-len");
    if (w.kind == TextWindows::Kind::Llama && context.add_bos && context.bos_id < 0)
        throw UserError(source + ": llama windows start with BOS, and the model adds one but names none");
    std::vector<int64_t> inputs(static_cast<size_t>(n * length)), targets(static_cast<size_t>(n * length), Dataset::kIgnoreIndex);
    for (int64_t r = 0; r < n; ++r) {
        const int64_t start = r * stride;
        int64_t* in = inputs.data() + r * length;
        int64_t* tg = targets.data() + r * length;
        std::copy_n(tokens.begin() + start, length, in);
        int64_t first_scored = 0;  // input position whose next token is the first scored
        if (w.kind == TextWindows::Kind::Fixed) {
            if (r > 0 && stride < length) first_scored = length - stride - 1;
        } else {
            first_scored = length / 2;
            if (context.add_bos) in[0] = context.bos_id;
        }
        for (int64_t i = first_scored; i + 1 < length; ++i) tg[i] = tokens[static_cast<size_t>(start + i + 1)];
    }
    const auto [begin, end] = split_range(n, split, source);
    Dataset d;
    d.kind = Dataset::Kind::Tokens;
    d.name = source;
    d.split = split;
    d.inputs = long_tensor(inputs, {n, length}).slice(0, begin, end).contiguous();
    d.targets = long_tensor(targets, {n, length}).slice(0, begin, end).contiguous();
    return d;
}

Dataset slice_dataset(const Dataset& d, int64_t start, int64_t count) {
    Dataset s = d;
    const int64_t end = std::min(d.size(), start + count);
    s.inputs = d.inputs.slice(0, start, end);
    s.targets = d.targets.slice(0, start, end);
    if (d.domains.defined()) s.domains = d.domains.slice(0, start, end);
    if (d.attention_mask.defined()) s.attention_mask = d.attention_mask.slice(0, start, end);
    s.pair_scores.clear();
    return trim_padding(s);
}

Dataset draw_rows(const Dataset& d, int64_t count, uint64_t seed) {
    if (count <= 0 || count >= d.size()) return d;
    if (seed == 0) return slice_dataset(d, 0, count);
    // A partial Fisher-Yates shuffle on splitmix64 draws: the same rows for the same seed on every
    // machine (no std:: distribution, whose results differ between standard libraries).
    const int64_t n = d.size();
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    const uint64_t key = mix64(seed ^ 0xCA11B8A7E5ULL);
    for (int64_t i = 0; i < count; ++i) {
        const auto j = i + static_cast<int64_t>(mix64(key ^ mix64(static_cast<uint64_t>(i))) % static_cast<uint64_t>(n - i));
        std::swap(order[i], order[j]);
    }
    order.resize(count);
    std::sort(order.begin(), order.end());
    return select_rows(d, long_tensor(order, {count}));
}

Dataset select_rows(const Dataset& d, const at::Tensor& rows) {
    const at::Tensor at = rows.to(d.inputs.device());
    Dataset s = d;
    s.inputs = d.inputs.index_select(0, at);
    s.targets = d.targets.index_select(0, at);
    if (d.domains.defined()) s.domains = d.domains.index_select(0, at);
    if (d.attention_mask.defined()) s.attention_mask = d.attention_mask.index_select(0, at);
    s.pair_scores.clear();
    return trim_padding(s);
}

Dataset trim_padding(const Dataset& d) {
    if (!d.attention_mask.defined() || d.size() == 0) return d;
    const int64_t longest = d.attention_mask.ne(0).sum(1).max().item<int64_t>();
    if (longest >= d.inputs.size(1)) return d;
    Dataset s = d;
    const int64_t keep = std::max<int64_t>(1, longest);
    s.inputs = d.inputs.slice(1, 0, keep);
    s.targets = d.targets.slice(1, 0, keep);
    s.attention_mask = d.attention_mask.slice(1, 0, keep);
    return s;
}

Dataset load_calibration_dataset(const std::string& spec, const DataOptions& options, const DataContext& context) {
    if (options.seed == 0 || options.samples <= 0 || spec.rfind("synthetic:", 0) == 0)
        return load_dataset(spec, options, context);
    DataOptions whole = options;
    whole.samples = 0;
    return draw_rows(load_dataset(spec, whole, context), options.samples, options.seed);
}

Dataset load_dataset(const std::string& spec, const DataOptions& options, const DataContext& context) {
    const std::string model = context.model_name.empty() ? "the model" : context.model_name;
    if (options.samples < 0) throw UserError("data '" + spec + "': the number of samples must be positive");
    if (options.sequence_length < 0) throw UserError("data '" + spec + "': the sequence length must be positive");
    if (options.sequence_length > 0 && context.max_positions > 0 && options.sequence_length > context.max_positions)
        throw UserError("data '" + spec + "': sequence length " + std::to_string(options.sequence_length) +
                        " exceeds " + model + "'s " + std::to_string(context.max_positions) + " positions");
    const int64_t positions = context.max_positions > 0 ? context.max_positions : 256;

    if (is_synthetic_spec(spec)) {
        const std::vector<SyntheticDomain> domains = parse_synthetic_spec(spec);
        const DataSplit split = options.split.value_or(DataSplit::Validation);
        if (context.vocab_size <= 0) throw UserError("data '" + spec + "' needs a token model; " + model + " takes images");
        Dataset d;
        // Generated data are int64 inputs and targets (plus the copies into tensors): refused
        // before generating when the requested samples cannot fit.
        auto require_fits = [&](int64_t samples, int64_t tokens) {
            require_allocatable(checked_product({static_cast<uint64_t>(samples), static_cast<uint64_t>(tokens), 4,
                                                 sizeof(int64_t)}),
                                "data '" + spec + "': " + std::to_string(samples) + " samples of " +
                                    std::to_string(tokens) + " tokens",
                                "their inputs and targets (int64)");
        };
        if (domains.front() == SyntheticDomain::RandomTokens && context.encode_sentence) {
            // Sentences of 32 tokens by default: about the length of the corpus's sentences.
            const int64_t length = options.sequence_length ? options.sequence_length
                                                           : std::min<int64_t>(context.sentence_length > 0 ? context.sentence_length : positions, 32);
            const int64_t samples = options.samples ? options.samples : 256;
            require_fits(samples, length);
            d = make_random_sentence_dataset(context, length, split, options.seed, samples);
        } else if (domains.front() == SyntheticDomain::RandomTokens) {
            const int64_t length = options.sequence_length ? options.sequence_length : std::min<int64_t>(positions, 64);
            const int64_t samples = options.samples ? options.samples : 256;
            require_fits(samples, length + 1);
            d = make_random_token_dataset(context.vocab_size, length, split, options.seed, samples);
        } else {
            if (context.vocab_size < synthetic_vocab::kSize)
                throw UserError("data '" + spec + "' uses the demo vocabulary (" + std::to_string(synthetic_vocab::kSize) +
                                " ids); " + model + " has only " + std::to_string(context.vocab_size));
            int64_t longest = 0;
            for (auto dom : domains) longest = std::max(longest, max_example_length(dom) - 1);
            if (context.max_positions > 0 && longest > context.max_positions)
                throw UserError("data '" + spec + "' needs " + std::to_string(longest) + " positions; " + model +
                                " has " + std::to_string(context.max_positions));
            const int64_t samples = options.samples ? options.samples : 1500;
            require_fits(samples, longest);
            d = make_synthetic_dataset(domains, split, options.seed, samples);
        }
        d.name = spec;
        return d;
    }

    std::error_code ec;
    const std::optional<SentenceLineRange> range = parse_sentence_line_range(spec);
    if (range) {
        if (!std::filesystem::is_regular_file(range->path, ec))
            throw UserError("data '" + spec + "': no such file " + range->path);
        if (context.encode_sentence) return load_sentences(spec, options, context);
        if (context.vocab_size <= 0 || !context.encode_text)
            throw UserError("data '" + spec + "': a line range (#lines=A-B) selects the lines of a text file for a model with "
                            "a tokenizer; " + model + " has none");
    }
    if (!range && !std::filesystem::exists(spec, ec))
        throw UserError("data '" + spec + "': no such file or folder (built-in data start with 'synthetic:')");
    const DataSplit split = options.split.value_or(DataSplit::All);
    const int64_t length = options.sequence_length ? options.sequence_length : std::min<int64_t>(positions, 256);

    if (!range && !std::filesystem::is_directory(spec, ec) && is_token_file_path(spec)) {
        if (context.vocab_size <= 0) throw UserError(spec + ": token data need a token model; " + model + " takes images");
        const TokenFile f = read_token_file(spec, context.vocab_size, options.token_dtype);
        if (f.rows > 0) {
            if (context.max_positions > 0 && f.columns - 1 > context.max_positions)
                throw UserError(spec + ": sequences of " + std::to_string(f.columns) + " tokens need " +
                                std::to_string(f.columns - 1) + " positions; " + model + " has " +
                                std::to_string(context.max_positions));
            return take(window_rows(f.tokens, f.rows, f.columns, split, spec), options.samples);
        }
        return take(make_text_windows(f.tokens, length, options.windows, context, split, spec), options.samples);
    }
    if (!range && !std::filesystem::is_directory(spec, ec) && looks_like_idx(spec)) {
        if (context.vocab_size > 0) throw UserError(spec + ": image data need an image model (mlp, cnn); " + model + " takes tokens");
        return take(load_images(spec, split), options.samples);
    }
    // Text: a file or a folder of .txt files.
    if (context.vocab_size <= 0) throw UserError(spec + ": text data need a token model; " + model + " takes images");
    if (context.encode_sentence) return load_sentences(spec, options, context);
    if (!context.encode_text)
        throw UserError(spec + ": " + model + " has no tokenizer for text data (tokenizer.json); use a pre-tokenized "
                        ".npy/.bin file");
    // A line range is one document: those lines of the file (a part of a corpus).
    std::vector<int64_t> tokens = tokenize_documents(
        range ? std::vector<TextDocument>{read_text_lines(range->path, range->first, range->last, spec)} : read_text_documents(spec),
        context.encode_text, context.eos_id);
    // Fixed and llama windows read the text as the peers tokenize it: no end-of-text token after
    // the last document.
    if (options.windows.kind != TextWindows::Kind::QuantLab && context.eos_id >= 0 && !tokens.empty() &&
        tokens.back() == context.eos_id)
        tokens.pop_back();
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= context.vocab_size)
            throw UserError(spec + ": the tokenizer produced id " + std::to_string(tokens[i]) + " outside " + model +
                            "'s vocabulary of " + std::to_string(context.vocab_size));
    return take(make_text_windows(tokens, length, options.windows, context, split, spec), options.samples);
}

}  // namespace ql
