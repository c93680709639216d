// SPDX-License-Identifier: GPL-3.0-or-later
// Sentence embeddings of a text file: the engine behind `quantlab-cli embed` (docs/CLI.md
// "embed"). One row per line of the file, pooled and normalised as the model folder's
// sentence-transformers configuration says. Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>

#include "engine/jobs/job.h"

namespace ql {

struct EmbedRequest {
    std::string model;            // an encoder's HF folder (sentence-transformers or plain BERT), or
                                  // a quantized checkpoint of one
    std::string data;             // a text file (or folder of .txt): one sentence per line
    std::string out;              // the .npy file to write: float32 [sentences, dimension]
    bool force = false;           // replace an existing `out`
    int64_t batch_size = 0;       // sentences per batch (0 = 32)
    int64_t sequence_length = 0;  // tokens per sentence incl. [CLS]/[SEP] (0 = the model's max_seq_length)
    std::string device = "cpu";  // where models and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
};

struct EmbedSummary {
    std::string model_path, data, out;
    int64_t sentences = 0;
    int64_t dimension = 0;
    int64_t max_tokens = 0;       // the sentence length used
    int64_t longest_tokens = 0;   // the longest sentence after cutting (= max_tokens: some were cut)
    std::string pooling;          // "mean", "cls+max" ...
    bool normalize = false;
    std::string config_source;    // "modules.json" or "default" (a plain BERT folder)
    double seconds = 0;           // embedding wall time (loading excluded)
};

// Validates first (model is an encoder with a tokenizer, data readable, out absent unless
// force), embeds, writes `out` atomically. Every line is a row, blank lines too (they embed the
// empty sentence), so row i is line i + 1. Progress phases "load", "embed", "save". UserError for
// bad input; JobCancelled leaves no file.
EmbedSummary run_embed(const EmbedRequest& request, JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
