// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/eval_json.h"

#include <cmath>

#include "engine/api/divergence_json.h"

namespace ql {
namespace {

nlohmann::json finite_or_null(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json eval_metrics_json(const EvalMetrics& m) {
    return {{"loss", finite_or_null(m.loss)},
            {"ppl", finite_or_null(m.ppl)},
            {"exact_match", finite_or_null(m.exact_match)},
            {"accuracy", finite_or_null(m.accuracy)},
            {"kl", finite_or_null(m.kl)},
            {"agreement", finite_or_null(m.agreement)},
            {"divergence", m.token_divergence ? token_divergence_json(*m.token_divergence) : nlohmann::json(nullptr)},
            {"cosine_mean", finite_or_null(m.cosine_mean)},
            {"cosine_p5", finite_or_null(m.cosine_p5)},
            {"cosine_min", finite_or_null(m.cosine_min)},
            {"spearman", finite_or_null(m.spearman)},
            {"teacher_spearman", finite_or_null(m.teacher_spearman)},
            {"contrastive_loss", finite_or_null(m.contrastive_loss)},
            {"tokens", m.tokens},
            {"examples", m.examples},
            {"pairs", m.pairs}};
}

nlohmann::json eval_report_json(const EvalReport& r) {
    nlohmann::json j = eval_metrics_json(r.overall);
    nlohmann::json domains = nlohmann::json::object();
    for (const auto& [name, m] : r.domains) domains[name] = eval_metrics_json(m);
    j["domains"] = domains;
    j["pooling"] = r.pooling.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.pooling);
    return j;
}

}  // namespace ql
