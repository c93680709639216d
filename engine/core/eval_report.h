// SPDX-License-Identifier: GPL-3.0-or-later
// The result of one evaluation (docs/DATA.md "Metrics"): what engine/eval computes and the eval
// facade, PTQ, training and reports pass on. Plain C++ types only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/divergence_report.h"

namespace ql {

// Metrics of one evaluation (or one domain of it). Unset = not applicable.
struct EvalMetrics {
    double loss = 0;                     // mean NLL per scored token (per image), natural log
    std::optional<double> ppl;           // exp(loss); token models only
    std::optional<double> exact_match;   // 0-1, data with answers (synthetic tasks)
    std::optional<double> accuracy;      // 0-1, classifiers (argmax == label)
    std::optional<double> kl;            // mean KL(teacher || student) per scored position, nats
    std::optional<double> agreement;     // 0-1, student top-1 == teacher top-1 per scored position
    // With a teacher on token data: llama.cpp's per-token KL statistics (divergence_report.h).
    std::optional<TokenDivergenceSummary> token_divergence;
    // Encoders (sentence embeddings, docs/DATA.md "Encoder metrics"). With a teacher: cosine
    // similarity of every sentence's embedding to the teacher's (mean, 5th percentile, minimum).
    std::optional<double> cosine_mean, cosine_p5, cosine_min;
    // With a pairs file: Spearman rank correlation of the cosine similarity of each pair's two
    // embeddings with the pair's score, for the model and (with a teacher) the teacher.
    std::optional<double> spearman, teacher_spearman;
    // Sentences without an MLM head: the in-batch contrastive loss (eval/contrastive_loss.h) of
    // each sentence against its deletion view, batches of the evaluation's batch size (nats).
    std::optional<double> contrastive_loss;
    int64_t tokens = 0;                  // scored positions (images for classifiers; masked
                                         // tokens for masked-LM encoders; 0 = no loss: an
                                         // encoder without an MLM head)
    int64_t examples = 0;                // sequences / images / sentences
    int64_t pairs = 0;                   // sentence pairs (pairs files)
};

struct EvalReport {
    EvalMetrics overall;
    // Per domain, in spec order (synthetic arithmetic "+", "-", "*", copy, reverse).
    std::vector<std::pair<std::string, EvalMetrics>> domains;
    std::string model_path;  // resolved folder
    std::string split;       // the split used
    std::string pooling;     // encoders: the sentence embedding ("mean, normalized"); "" otherwise
    double seconds = 0;      // wall time of the evaluation (loading excluded)
};

}  // namespace ql
