// SPDX-License-Identifier: GPL-3.0-or-later
// LoftQ (Li et al. 2023, "LoftQ: LoRA-Fine-Tuning-Aware Quantization for Large Language Models"):
// start the adapters and the quantized base together so that Q + s B A ~ W instead of Q ~ W,
// B = 0. For every adapted layer with a weight quantizer, N alternations of
//   Q = quantize(W - s B A)                 (the base's own format, spec and block scales)
//   s B A = the rank-r SVD truncation of W - Q
// as PEFT's loftq_utils.loftq_init (U sqrt(S) and sqrt(S) Vh of the residual's top r singular
// values). The layer's weight becomes Q (dequantized, so the quantizer reproduces it), the
// adapters the factors. PEFT writes B = L, A = R, which is exact only when alpha = r (scaling
// 1); here both factors are divided by sqrt(s), so s B A is the truncation for any alpha.
// Layers without a weight quantizer (an FP base) keep W and the default init.
#pragma once

#include <string>
#include <vector>

#include "engine/lora/lora_adapters.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct LoftqLayer {
    std::string module;
    double base_error = 0;    // ||W - quantize(W)||_F / ||W||_F: the plain quantized base (QLoRA, B = 0)
    double loftq_error = 0;   // ||W - (Q + s B A)||_F / ||W||_F after the last iteration
};

struct LoftqReport {
    std::vector<LoftqLayer> layers;
    double seconds = 0;
};

// UserError for a base with online rotations or pre_quant_scales (AWQ / SmoothQuant): LoftQ
// here works on plain quantized weights. Runs without gradients.
LoftqReport loftq_initialise(QuantizedModel& base, LoraAdapters& adapters, int64_t iterations);

}  // namespace ql
