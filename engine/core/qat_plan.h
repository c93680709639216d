// SPDX-License-Identifier: GPL-3.0-or-later
// The QAT planner for the CLI and GUI (plain C++, no LibTorch types): how much of a token budget
// to spend in QAT after FP training, from the law of Dremov, Grangier, Katharopoulos, Hannun,
// "Compute-Optimal Quantization-Aware Training" (Apple, arXiv 2509.22935, ICLR 2026), restated in
// shared/design/QAT.md; and a fit of a user's own measured fraction sweep to set beside it.
// Implemented in engine/train/qat_planner.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ql {

// The paper's fitted constant in f = exp(-a / ln S) and the fit's mean absolute error (QAT.md).
inline constexpr double kQatFractionLawA = 6.7297;
inline constexpr double kQatFractionLawMae = 0.09;

struct QatPlanInput {
    int64_t parameters = 0;    // N, parameters that are quantized/trained, > 0
    int bits = 4;              // B, the QAT bit width, 1..16
    double total_tokens = 0;   // D_total = FP tokens + QAT tokens, > 0 (finite)
};

struct QatPlan {
    double tokens_per_parameter_byte = 0;  // S = D_total / (N * B / 8)
    double optimal_qat_fraction = 0;       // f = exp(-a / ln S), a = kQatFractionLawA, clamped to [0, 1];
                                           // 0 when S <= 1 (the formula is undefined there; 0 is its
                                           // limit as S -> 1 from above)
    double fraction_low = 0, fraction_high = 0;  // f -+ kQatFractionLawMae, clamped to [0, 1]
    double qat_tokens = 0, fp_tokens = 0;        // f * D_total and the rest; they sum to D_total
    std::string source;                    // the citation and the formula
    std::vector<std::string> caveats;      // what the number does not know, for this input
};

// UserError for parameters <= 0, bits outside 1..16, tokens not positive and finite.
QatPlan plan_qat(const QatPlanInput& input);

// One point of a user's sweep: QAT fraction in [0, 1] and the final loss measured with it.
struct QatFractionPoint {
    double fraction = 0;
    double loss = 0;
};

// Least-squares quadratic loss(f) ~ c0 + c1 f + c2 f^2 through the measured points.
struct QatFractionFit {
    double c0 = 0, c1 = 0, c2 = 0;
    bool convex = false;             // c2 > 0: the fit has an interior minimum (maybe outside the range)
    double min_fraction = 0, max_fraction = 0;  // the measured range
    double optimum_fraction = 0;     // argmin of the fit within [min_fraction, max_fraction]
                                     // (the vertex clamped to the range; if not convex, the end point with the lower fitted loss)
    double optimum_loss = 0;         // the fit's loss there
    double rms_residual = 0;         // sqrt(mean((fit(f_i) - loss_i)^2))
};

// UserError for fewer than 3 points, fewer than 3 distinct fractions, a fraction outside [0, 1]
// or a loss that is not finite.
QatFractionFit fit_qat_fraction_curve(const std::vector<QatFractionPoint>& measured);

}  // namespace ql
