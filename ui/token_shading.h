// SPDX-License-Identifier: GPL-3.0-or-later
// How the Generate view shows a generated text: each token a span whose background says how far
// the model's next-token distribution there was from the reference's (KL in nats, on a log
// scale from 0.001 -- barely tinted -- to 1 and more -- full colour), the first token where the
// output parts from the reference's framed, and every token a link "token:<index>" so that
// hovering it can show its alternatives (tokenToolTip). Plain functions, for the view and tests.
#pragma once

#include <QColor>
#include <QString>

#include <vector>

#include "engine/api/generate_api.h"

namespace ql {

// 0 (no tint) .. 1 (full): log10(kl / 0.001) / 3, clamped.
double klShade(double kl);

// The HTML of one output's generated tokens. `shade` false for the reference (no KL of its own).
// `accent` is the tint at full KL; `firstDivergence` < 0 marks nothing.
QString generatedTokensHtml(const std::vector<GeneratedTokenInfo>& tokens, bool shade, int64_t firstDivergence,
                            const QColor& accent, const QColor& text);

// "'Paris'  p 0.152\nalternatives: 'Paris' 0.152, 'The' 0.140, ... \nKL to FP 0.031 nats".
QString tokenToolTip(const GeneratedTokenInfo& token, bool hasReference);

}  // namespace ql
