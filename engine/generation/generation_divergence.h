// SPDX-License-Identifier: GPL-3.0-or-later
// How far a generation's next-token distributions were from a reference model's (the FP model
// for a quantized one) along the generated text: the reference reads the same prompt and
// generated tokens in one forward pass (teacher forcing), and at each generated position
// KL(reference || model) in nats is taken between the two softmax distributions, in float64 --
// the shading of the Generate view and the "first token where they part" of a comparison.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/generation/text_generator.h"

namespace ql {

// One value per generated token of `generated` (which must have kept its logits), in order.
// The reference must share the vocabulary. Runs under inference mode.
std::vector<double> generation_kl(Model& reference, const GenerationResult& generated);

// The index of the first generated token at which two generations differ: -1 when their tokens
// are the same, the shorter one's length when it is a proper prefix of the other.
int64_t first_divergent_token(const GenerationResult& a, const GenerationResult& b);

}  // namespace ql
