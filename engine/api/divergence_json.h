// SPDX-License-Identifier: GPL-3.0-or-later
// The divergence report as JSON (docs/CLI.md "divergence", what `quantlab-cli divergence --json`
// prints and what projects store) and back (the GUI reads stored reports). Non-finite numbers
// are null (an SQNR of two equal states is +inf: null, read back as +inf). Facade header.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/divergence_report.h"

namespace ql {

// `tokens` of divergence and `divergence` of eval --json: tokens, kl_mean, kl_median, kl_p90,
// kl_p95, kl_p99, kl_max, same_top1, delta_p_mean, rms_delta_p, ppl_fp, ppl_q, delta_ppl.
nlohmann::json token_divergence_json(const TokenDivergenceSummary& summary);

nlohmann::json divergence_report_json(const DivergenceReport& report);
// The inverse; a document that is not such a report is a UserError naming `source` and the field.
DivergenceReport parse_divergence_report(const std::string& text, const std::string& source);

}  // namespace ql
