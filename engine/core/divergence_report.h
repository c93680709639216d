// SPDX-License-Identifier: GPL-3.0-or-later
// Where a quantized model's error comes from (docs/DIAGNOSIS.md): the depth-wise error of the
// residual stream, block by block and per sub-layer, propagated and isolated; its effect on the
// logits; and the per-token divergence summary llama.cpp's `perplexity --kl-divergence` reports.
// Plain C++ types (facade, project records, GUI).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ql {

// The error of a hidden state h_q against the FP one h (both [tokens, hidden]), over the scored
// positions: rel_l2 = sqrt(sum |h_q - h|^2 / sum |h|^2), sqnr_db = 10 log10(sum |h|^2 /
// sum |h_q - h|^2) (= -20 log10 rel_l2; +inf when equal), cosine = the mean over tokens of
// cos(h_q_t, h_t).
struct HiddenError {
    double rel_l2 = 0;
    double cosine = 1;
    double sqnr_db = 0;
};

// Propagated: the quantized model up to here, on the data. Isolated: only this part quantized,
// its input the FP model's.
struct ErrorSplit {
    HiddenError propagated, isolated;
    // Token models: KL(FP || ...) at the logits, mean per scored position, nats.
    //   kl_propagated: everything up to and including this part quantized, the rest of the model
    //                  FP (the quantized stream here continued by the FP model);
    //   kl_increment:  kl_propagated minus that of the part before: what this part adds. The
    //                  increments of the embeddings, every block and the head add up to the
    //                  final KL exactly (a telescoping sum of measured values);
    //   kl_isolated:   only this part quantized (FP input), the rest FP.
    std::optional<double> kl_propagated, kl_increment, kl_isolated;
};

struct BlockDivergence {
    std::string name;           // HF module prefix, "model.layers.3"
    ErrorSplit block;           // at the block's output (after its MLP half)
    ErrorSplit attention, mlp;  // at the stream after the attention half / after the MLP half
};

// One quantized layer on its FP inputs (its output against the FP layer's), over the scored
// positions, as the PTQ report's output SQNR but measured on the divergence data.
struct LayerDivergence {
    std::string name;
    int64_t block = -1;         // index into blocks, -1 outside them (embeddings, head)
    double rel_l2 = 0, sqnr_db = 0;
};

// The per-token statistics of llama.cpp tools/perplexity/perplexity.cpp kl_divergence(), over
// the scored positions: KL(FP || Q) per token; mean, median and percentiles with its linear
// interpolation (p = f (n - 1)); "same top p" = the fraction of tokens whose top-1 agrees;
// delta p = p_Q(target) - p_FP(target); RMS delta p = sqrt(mean delta p^2); ppl = exp(mean NLL)
// for both models, delta_ppl = ppl_q - ppl_fp.
struct TokenDivergenceSummary {
    int64_t tokens = 0;
    double kl_mean = 0, kl_median = 0, kl_p90 = 0, kl_p95 = 0, kl_p99 = 0, kl_max = 0;
    double same_top1 = 0;
    double delta_p_mean = 0, rms_delta_p = 0;
    double ppl_fp = 0, ppl_q = 0, delta_ppl = 0;
};

// One scored token, in context (the worst tokens of a run).
struct TokenDivergence {
    int64_t example = 0, position = 0;  // row in the data and the position predicting `target`
    // Decoders: the input up to and including the position (<= 40 tokens), the target (the next
    // token) and the scored tokens after it (<= 8). Encoders: the input before the position, the
    // token at it, and the 8 after it.
    std::string context;
    std::string continuation;
    std::string domain;                 // synthetic task domain ("" otherwise)
    std::string target, fp_top1, q_top1;  // tokens as text (encoders: no top-1s)
    double kl = 0;                      // KL(FP || Q) here, nats (encoders: the final rel_l2)
    double p_fp_top1 = 0, p_q_top1 = 0;  // each model's probability of its own top-1
    double p_fp_target = 0, p_q_target = 0, delta_p = 0;
    // Per block, at this token: the relative L2 error of the block output, propagated and isolated.
    std::vector<double> block_propagated, block_isolated;
    // Quantized layers with the largest isolated error at this token (largest first, at most 8).
    std::vector<std::pair<std::string, double>> worst_layers;
};

struct DivergenceReport {
    std::string model;          // the FP model's folder
    std::string quantized;      // the quantized checkpoint's folder, or the recipe's name
    std::string recipe;         // recipe name ("" when unknown)
    std::string data, split;
    bool encoder = false;       // no logits: hidden-state errors only (BERT / MiniLM)
    int64_t examples = 0, scored_tokens = 0;
    HiddenError embeddings;     // stage 0 (propagated = isolated)
    std::optional<double> embeddings_kl;  // KL when only the embeddings are quantized
    std::vector<BlockDivergence> blocks;  // forward order
    HiddenError final_hidden;   // the last stage (encoders: the output)
    // Encoders: mean over examples of cos(mean-pooled embedding Q, FP), the sentence embedding.
    std::optional<double> sentence_cosine;
    // Token models: the final KL (everything quantized), what the head (final norm, lm_head)
    // adds after the last block, and the sum of the blocks' isolated KLs (compare with `kl`: the
    // errors compound when the sum is smaller).
    std::optional<double> kl, head_kl_increment, isolated_kl_sum;
    std::optional<TokenDivergenceSummary> tokens;
    std::vector<LayerDivergence> layers;
    std::vector<TokenDivergence> worst_tokens;  // largest KL first
    double seconds = 0;
};

}  // namespace ql
