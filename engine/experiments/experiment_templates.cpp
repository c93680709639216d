// SPDX-License-Identifier: GPL-3.0-or-later
// The built-in experiment templates (docs/EXPERIMENTS.md "Templates"): the seeds' studies as
// experiment files, each with the claim of its source (shared/design/QAT.md restates them).
// Sizes default to a few minutes per template on 2 CPU cores for the demo; --steps,
// --eval-samples and --replicates scale them up. A template is ordinary experiment JSON:
// `quantlab-cli experiment template NAME` prints it for a user to copy and edit.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/errors.h"
#include "engine/experiments/experiment_spec.h"

namespace ql::experiments {
namespace {

// Inline recipes for formats without a preset (docs/recipes/ holds the same as files).
const std::string kInt4W4A4G64 =
    R"({"name": "INT4_W4A4_G64", "description": "INT4 symmetric group 64 weights and dynamic inputs, RTN",
        "algorithm": "max", "quant_cfg": [{"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 64}},
        {"quantizer_name": "*input_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 64, "dynamic": true}},
        {"quantizer_name": "*lm_head*", "enable": false}]})";
const std::string kMxfp6W6A6 =
    R"({"name": "MXFP6_E2M3", "description": "W6A6 OCP MXFP6 E2M3 (E8M0 scale per 32), dynamic", "algorithm": "max",
        "quant_cfg": [{"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "mxfp6_e2m3"}},
        {"quantizer_name": "*input_quantizer", "cfg": {"format": "mxfp6_e2m3"}},
        {"quantizer_name": "*lm_head*", "enable": false}]})";
std::string integer_weights_g64(const std::string& name, const std::string& format) {
    return R"({"name": ")" + name + R"(", "description": "symmetric group 64 weights, inputs in full precision, RTN",
        "algorithm": "max", "quant_cfg": [{"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": ")" + format + R"(", "granularity": "group", "group_size": 64}},
        {"quantizer_name": "*lm_head*", "enable": false}]})";
}

const std::vector<std::pair<std::string, std::string>>& templates() {
    static const std::vector<std::pair<std::string, std::string>> all = {
        {"qad-vs-qat", R"({
  "quantlab_experiment": 1,
  "name": "qad-vs-qat",
  "title": "PTQ vs QAT vs QAD recovery of NVFP4 W4A4",
  "claim": "QAD (KL distillation from the frozen full-precision teacher, T = 1, no cross-entropy) recovers near-BF16 accuracy where PTQ loses several points, and more than QAT: a 49 B model on AIME25 scored BF16 46.0, PTQ 32.3, QAT 41.5, QAD 45.6.",
  "source": "NVIDIA, Quantization-Aware Distillation for NVFP4 Inference Accuracy Recovery (arXiv 2601.20088) and the Model Optimizer QAT/QAD blog",
  "analysis": "comparisons",
  "replicates": 3,
  "base": {"model": "demo", "recipe": "NVFP4_DEFAULT", "data": "synthetic:arith", "eval_data": "synthetic:arith",
           "steps": 60, "batch_size": 32, "lr": 1e-4, "eval_samples": 500, "calib_samples": 64},
  "grid": {"method": ["ptq", "qat", "qad"]},
  "metrics": ["exact_match", "kl", "agreement", "loss"],
  "comparisons": [
    {"name": "QAD − QAT", "a": {"method": "qad"}, "b": {"method": "qat"}},
    {"name": "QAD − PTQ", "a": {"method": "qad"}, "b": {"method": "ptq"}},
    {"name": "QAT − PTQ", "a": {"method": "qat"}, "b": {"method": "ptq"}}
  ]
})"},
        {"nvfp4-vs-mxfp4", R"({
  "quantlab_experiment": 1,
  "name": "nvfp4-vs-mxfp4",
  "title": "NVFP4 vs MXFP4 vs MXFP6/8 vs INT4, W and A, at their bits per weight",
  "claim": "NVFP4 beats MXFP4 at 4 bits: its 16-element blocks with E4M3 scales (and an FP32 global scale) keep small values that MXFP4's power-of-two scales per 32 elements lose, for 0.25 more bits per weight.",
  "source": "NVIDIA QAD report (arXiv 2601.20088); NVIDIA blog Introducing NVFP4 for Efficient and Accurate Low-Precision Inference; OCP Microscaling Formats (MX) v1.0",
  "analysis": "frontier",
  "replicates": 3,
  "base": {"model": "demo", "method": "ptq", "data": "synthetic:arith", "eval_data": "synthetic:arith",
           "eval_samples": 500, "calib_samples": 64},
  "grid": {"recipe": ["NVFP4_DEFAULT", "MXFP4", )" + kInt4W4A4G64 + R"(, )" + kMxfp6W6A6 + R"(, "MXFP8"]},
  "metrics": ["exact_match", "kl", "agreement", "bits_per_parameter"],
  "comparisons": [
    {"name": "NVFP4 − MXFP4", "a": {"recipe": "NVFP4_DEFAULT"}, "b": {"recipe": "MXFP4"}},
    {"name": "NVFP4 − INT4", "a": {"recipe": "NVFP4_DEFAULT"}, "b": {"recipe": "INT4_W4A4_G64"}},
    {"name": "MXFP6 − MXFP4", "a": {"recipe": "MXFP6_E2M3"}, "b": {"recipe": "MXFP4"}},
    {"name": "MXFP8 − NVFP4", "a": {"recipe": "MXFP8"}, "b": {"recipe": "NVFP4_DEFAULT"}}
  ]
})"},
        {"bits-frontier", R"({
  "quantlab_experiment": 1,
  "name": "bits-frontier",
  "title": "Accuracy and KL against effective bits per weight (block and global scales counted), uniform recipes and mixed precision",
  "claim": "Per-layer mixed precision over {NVFP4, FP8, BF16} dominates uniform recipes at every bit budget; adding FP8 to the {NVFP4, BF16} menu helps at every budget.",
  "source": "NVIDIA Model Optimizer AutoQuantize (mtq.auto_quantize) documentation and examples",
  "analysis": "frontier",
  "replicates": 2,
  "base": {"model": "demo", "method": "ptq", "data": "synthetic:arith", "eval_data": "synthetic:arith",
           "eval_samples": 500, "calib_samples": 64},
  "grid": [{"recipe": ["MXFP4", "NVFP4_DEFAULT", "NVFP4_MLP_ONLY", "MXFP8", "FP8_DEFAULT"]},
           {"method": ["mixed"], "bits": [5, 6, 7], "menu": [["NVFP4", "FP8", "BF16"], ["NVFP4", "BF16"]]}],
  "metrics": ["kl", "exact_match", "agreement", "bits_per_parameter"],
  "comparisons": [
    {"name": "NVFP4 MLP-only − NVFP4", "a": {"recipe": "NVFP4_MLP_ONLY"}, "b": {"recipe": "NVFP4_DEFAULT"}},
    {"name": "FP8 − MXFP8", "a": {"recipe": "FP8_DEFAULT"}, "b": {"recipe": "MXFP8"}},
    {"name": "FP8 in the menu", "a": {"menu": "NVFP4+FP8+BF16"}, "b": {"menu": "NVFP4+BF16"}},
    {"name": "mixed 6 − 5 bits", "a": {"bits": 6}, "b": {"bits": 5}}
  ]
})"},
        {"data-robustness", R"({
  "quantlab_experiment": 1,
  "name": "data-robustness",
  "title": "QAD and QAT given partial-domain data or random tokens, scored on every domain",
  "claim": "QAD tolerates training data that QAT does not: on AceReason 7B (AIME24) QAD on math-only data scored 71.0, code-only 71.0, random tokens 68.6, against PTQ 69.4 and BF16 73.0; the student recovers skills absent from its data.",
  "source": "NVIDIA, Quantization-Aware Distillation for NVFP4 Inference Accuracy Recovery, arXiv 2601.20088",
  "analysis": "comparisons",
  "replicates": 3,
  "base": {"model": "demo", "recipe": "NVFP4_DEFAULT", "calib": "synthetic:arith", "eval_data": "synthetic:arith",
           "steps": 60, "batch_size": 32, "lr": 1e-4, "eval_samples": 500, "calib_samples": 64},
  "grid": {"method": ["qat", "qad"], "data": ["synthetic:arith", "synthetic:arith:+", "synthetic:random-tokens"]},
  "metrics": ["exact_match", "exact_match/*", "exact_match/-", "exact_match/+", "kl"],
  "comparisons": [
    {"name": "QAD − QAT", "a": {"method": "qad"}, "b": {"method": "qat"}},
    {"name": "+ only − all, QAD", "a": {"method": "qad", "data": "synthetic:arith:+"}, "b": {"method": "qad", "data": "synthetic:arith"}},
    {"name": "+ only − all, QAT", "a": {"method": "qat", "data": "synthetic:arith:+"}, "b": {"method": "qat", "data": "synthetic:arith"}}
  ]
})"},
        {"cooldown-fusion", R"({
  "quantlab_experiment": 1,
  "name": "cooldown-fusion",
  "title": "QAT fused into the LR cooldown vs QAT after the full-precision decay, INT4 and INT8 weights",
  "claim": "Starting QAT where the full-precision schedule would begin its decay, and running the decay during QAT, beats FP training with its own decay followed by QAT with a new warm-up at 4 and 6 bits (often saving more than 10 % of the tokens), not at 1-2 bits.",
  "source": "Dremov, Grangier, Katharopoulos, Hannun, Compute-Optimal Quantization-Aware Training, Apple, arXiv 2509.22935",
  "analysis": "comparisons",
  "replicates": 3,
  "base": {"model": "demo", "method": "qat", "data": "synthetic:arith", "eval_data": "synthetic:arith",
           "steps": 60, "batch_size": 32, "lr": 1e-4, "eval_samples": 500, "calib_samples": 64},
  "grid": {"recipe": [)" + integer_weights_g64("W4A16_INT4_G64", "int4") + R"(, )" +
             integer_weights_g64("W8A16_INT8_G64", "int8") + R"(],
           "fp_steps": [0, 30]},
  "metrics": ["exact_match", "kl", "loss"],
  "comparisons": [
    {"name": "fused − after decay", "a": {"fp_steps": 30}, "b": {"fp_steps": 0}}
  ]
})"},
        {"qat-fraction", R"({
  "quantlab_experiment": 1,
  "name": "qat-fraction",
  "title": "Token budgets x QAT fractions from scratch, INT2 weights, beside the planner's predicted fraction",
  "claim": "The loss-optimal share of a token budget to spend in QAT grows with the tokens per parameter byte S: f = exp(-6.7297 / ln S), fitted over 757 runs of 86 M - 2.2 B parameters at 1-6 bits; the old fixed 10 % is optimal only near S = 19.",
  "source": "Dremov, Grangier, Katharopoulos, Hannun, Compute-Optimal Quantization-Aware Training, Apple, arXiv 2509.22935",
  "analysis": "qat_fraction",
  "replicates": 2,
  "base": {"model": "demo", "method": "fp-then-qat", "recipe": )" + integer_weights_g64("W2A16_INT2_G64", "int2") + R"(,
           "qat_bits": 2, "data": "synthetic:arith", "eval_data": "synthetic:arith", "lr": 1e-3, "warmup_steps": 5,
           "batch_size": 64, "eval_samples": 500, "calib_samples": 64},
  "grid": {"total_steps": [100, 200], "qat_fraction": [0.1, 0.3, 0.5]},
  "metrics": ["loss", "exact_match", "fp_exact_match", "planner_qat_fraction", "tokens_per_parameter_byte"],
  "comparisons": [
    {"name": "f 0.3 − 0.1", "a": {"qat_fraction": 0.3}, "b": {"qat_fraction": 0.1}},
    {"name": "f 0.5 − 0.3", "a": {"qat_fraction": 0.5}, "b": {"qat_fraction": 0.3}}
  ]
})"},
    };
    return all;
}

}  // namespace

std::vector<std::string> experiment_template_names() {
    std::vector<std::string> out;
    for (const auto& t : templates()) out.push_back(t.first);
    return out;
}

const std::string& experiment_template_json(const std::string& name) {
    for (const auto& t : templates())
        if (t.first == name) return t.second;
    std::string list;
    for (const auto& t : templates()) list += (list.empty() ? "" : ", ") + t.first;
    throw UserError("no experiment template '" + name + "' (templates: " + list + ")");
}

}  // namespace ql::experiments
