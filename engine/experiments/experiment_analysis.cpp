// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/experiments/experiment_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/core/qat_plan.h"

namespace ql::experiments {
namespace {

using nlohmann::json;

bool is_rate(const std::string& metric) {
    return metric == "exact_match" || metric == "accuracy" || metric == "agreement" || metric.rfind("exact_match/", 0) == 0 ||
           metric.rfind("evalsuite/success", 0) == 0 || metric == "evalsuite/json_valid" || metric.rfind("evalsuite/tool_", 0) == 0;
}

// Item counts (an eval suite's flips against the FP model).
bool is_count(const std::string& metric) { return metric == "evalsuite/right_to_wrong" || metric == "evalsuite/wrong_to_right"; }

// Metrics that cannot be negative (a KL divergence, a cross-entropy, a size): their cells'
// intervals stop at 0 as a rate's stop at [0, 1].
bool is_nonnegative(const std::string& metric) {
    return metric == "kl" || metric == "loss" || metric == "contrastive_loss" || metric == "bits_per_parameter" ||
           metric == "tokens_per_parameter_byte" || is_count(metric);
}

// The key of the cell that `cell` becomes with the comparison's b values in place of a's.
std::string partner_key(const ExperimentSpec& spec, const Cell& cell, const Comparison& c) {
    std::string key;
    for (const std::string& axis : spec.axes) {
        const auto own = cell.values.find(axis);
        if (own == cell.values.end()) continue;  // a grid of a list of grids that does not vary it
        const auto it = c.b.find(axis);
        key += (key.empty() ? "" : ",") + axis + "=" + (it != c.b.end() ? it->second : own->second);
    }
    return key.empty() ? "base" : key;
}

bool matches(const Cell& cell, const std::map<std::string, std::string>& selector) {
    for (const auto& [k, v] : selector)
        if (const auto it = cell.values.find(k); it == cell.values.end() || it->second != v) return false;
    return true;
}

// A rate lies in [0, 1] and a difference of two in [-1, 1]: the t interval of two or three
// replicates can reach past them (t(0.975, 1) = 12.7), and clipped to them it still holds the
// true value whenever the unclipped one did (the same coverage), without an exact match of 102 %.
Interval clipped(Interval ci, double low, double high) {
    if (std::isfinite(ci.low)) ci.low = std::clamp(ci.low, low, high);
    if (std::isfinite(ci.high)) ci.high = std::clamp(ci.high, low, high);
    return ci;
}

json bound(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string fmt(const std::string& metric, double v) {
    if (!std::isfinite(v)) return "-";
    char buf[48];
    if (is_rate(metric))
        std::snprintf(buf, sizeof buf, "%.2f", 100 * v);
    else if (metric == "bits_per_parameter")
        std::snprintf(buf, sizeof buf, "%.3f", v);
    else if (is_count(metric))
        std::snprintf(buf, sizeof buf, "%.1f", v);
    else
        std::snprintf(buf, sizeof buf, "%.3e", v);
    return buf;
}

}  // namespace

ExperimentResult analyse(const ExperimentSpec& spec, const std::vector<RunResult>& runs, double confidence) {
    ExperimentResult out;
    std::map<std::string, std::map<int64_t, const RunResult*>> by_cell;  // cell -> replicate -> run
    for (const RunResult& r : runs) by_cell[r.cell][r.replicate] = &r;

    for (const Cell& cell : spec.cells) {
        const auto it = by_cell.find(cell.key);
        if (it == by_cell.end() || it->second.empty()) continue;
        CellSummary s;
        s.cell = &cell;
        for (const auto& [rep, run] : it->second) s.run_ids.push_back(run->run_id);
        for (const std::string& metric : spec.metrics) {
            MetricSummary m;
            m.metric = metric;
            int64_t trials = 0;
            for (const auto& [rep, run] : it->second) {
                const auto v = run->metrics.find(metric);
                if (v == run->metrics.end()) continue;
                m.values.push_back(v->second);
                trials = run->examples;
            }
            if (m.values.empty()) continue;
            m.value = mean_interval(m.values, confidence);
            m.interval = m.value.n > 1 ? "t" : "none";
            if (is_rate(metric)) m.value.ci = clipped(m.value.ci, 0.0, 1.0);
            if (is_nonnegative(metric)) m.value.ci = clipped(m.value.ci, 0.0, std::numeric_limits<double>::infinity());
            if (m.value.n == 1 && is_rate(metric) && metric != "agreement" && trials > 0 && metric.find('/') == std::string::npos) {
                const auto k = static_cast<int64_t>(std::llround(m.values[0] * static_cast<double>(trials)));
                const Interval w = wilson_interval(k, trials, confidence);
                m.value.ci = w;
                m.interval = "wilson";
            }
            s.metrics.push_back(std::move(m));
        }
        out.cells.push_back(std::move(s));
    }

    for (const Comparison& c : spec.comparisons) {
        for (const Cell& cell : spec.cells) {
            if (!matches(cell, c.a)) continue;
            const std::string other = partner_key(spec, cell, c);
            const auto ia = by_cell.find(cell.key), ib = by_cell.find(other);
            if (ia == by_cell.end() || ib == by_cell.end()) continue;
            ComparisonSummary s;
            s.comparison = &c;
            s.a = cell.key;
            s.b = other;
            for (const std::string& metric : spec.metrics) {
                std::vector<double> a, b;
                int64_t ta = 0, tb = 0;
                for (const auto& [rep, run_a] : ia->second) {
                    const auto rb = ib->second.find(rep);
                    if (rb == ib->second.end()) continue;
                    const auto va = run_a->metrics.find(metric), vb = rb->second->metrics.find(metric);
                    if (va == run_a->metrics.end() || vb == rb->second->metrics.end()) continue;
                    a.push_back(va->second), b.push_back(vb->second);
                    ta = run_a->examples, tb = rb->second->examples;
                }
                if (a.empty()) continue;
                MetricSummary m;
                m.metric = metric;
                m.value = paired_difference(a, b, confidence);
                for (std::size_t i = 0; i < a.size(); ++i) m.values.push_back(a[i] - b[i]);
                m.interval = m.value.n > 1 ? "paired t" : "none";
                if (is_rate(metric)) m.value.ci = clipped(m.value.ci, -1.0, 1.0);
                if (m.value.n == 1 && metric == "exact_match" && ta > 0 && tb > 0) {
                    m.value.ci = newcombe_difference_interval(std::llround(a[0] * ta), ta, std::llround(b[0] * tb), tb, confidence);
                    m.interval = "newcombe";
                }
                s.metrics.push_back(std::move(m));
            }
            out.comparisons.push_back(std::move(s));
        }
    }
    out.qat_fraction_optima = qat_fraction_optima(out.cells);
    return out;
}

std::vector<QatFractionOptimum> qat_fraction_optima(const std::vector<CellSummary>& cells) {
    std::map<std::string, QatFractionOptimum> groups;  // by group key, in key order
    std::map<std::string, std::vector<double>> planner;
    for (const CellSummary& c : cells) {
        const RunParameters& p = c.cell->parameters;
        if (p.method != "fp-then-qat") continue;
        // The held-out loss: a token model's NLL, a sentence encoder's contrastive loss.
        const MetricSummary* loss = nullptr;
        for (const MetricSummary& m : c.metrics)
            if (m.metric == "loss" || (m.metric == "contrastive_loss" && !loss)) loss = &m;
        if (!loss) continue;
        std::string group;
        for (const auto& [axis, value] : c.cell->values)
            if (axis != "qat_fraction") group += (group.empty() ? "" : ",") + axis + "=" + value;
        if (group.empty()) group = "base";
        QatFractionOptimum& g = groups[group];
        g.group = group;
        g.total_steps = p.total_steps;
        g.points.emplace_back(p.qat_fraction, loss->value.mean);
        for (const MetricSummary& m : c.metrics)
            if (m.metric == "planner_qat_fraction") planner[group].push_back(m.value.mean);
    }
    std::vector<QatFractionOptimum> out;
    for (auto& [key, g] : groups) {
        std::sort(g.points.begin(), g.points.end());
        if (const auto it = planner.find(key); it != planner.end() && !it->second.empty()) {
            double sum = 0;
            for (double v : it->second) sum += v;
            g.planner_fraction = sum / static_cast<double>(it->second.size());
        }
        if (g.points.size() < 3) {
            g.note = "needs 3 QAT fractions with a mean loss to fit, has " + std::to_string(g.points.size());
        } else {
            std::vector<QatFractionPoint> pts;
            for (const auto& [f, l] : g.points) pts.push_back({f, l});
            const QatFractionFit fit = fit_qat_fraction_curve(pts);
            g.fitted = true;
            g.convex = fit.convex;
            g.optimum_fraction = fit.optimum_fraction;
            g.optimum_loss = fit.optimum_loss;
            g.rms_residual = fit.rms_residual;
            if (!fit.convex) g.note = "the fit is not convex: the optimum is an end of the measured range";
        }
        out.push_back(std::move(g));
    }
    return out;
}

std::string result_json(const ExperimentSpec& spec, const ExperimentResult& result) {
    json cells = json::array();
    for (const CellSummary& c : result.cells) {
        json metrics = json::object();
        for (const MetricSummary& m : c.metrics)
            metrics[m.metric] = {{"mean", m.value.mean}, {"ci_low", bound(m.value.ci.low)}, {"ci_high", bound(m.value.ci.high)},
                                 {"n", m.value.n}, {"sd", bound(m.value.sd)}, {"interval", m.interval}, {"values", m.values}};
        cells.push_back({{"cell", c.cell->key}, {"values", c.cell->values}, {"parameters", json::parse(c.cell->parameters_json)},
                         {"runs", c.run_ids}, {"metrics", metrics}});
    }
    json comparisons = json::array();
    for (const ComparisonSummary& c : result.comparisons) {
        json metrics = json::object();
        for (const MetricSummary& m : c.metrics)
            metrics[m.metric] = {{"difference", m.value.mean}, {"ci_low", bound(m.value.ci.low)},
                                 {"ci_high", bound(m.value.ci.high)}, {"n", m.value.n}, {"interval", m.interval},
                                 {"values", m.values}};
        comparisons.push_back({{"name", c.comparison->name}, {"a", c.a}, {"b", c.b}, {"metrics", metrics}});
    }
    json optima = json::array();
    for (const QatFractionOptimum& o : result.qat_fraction_optima) {
        json points = json::array();
        for (const auto& [f, l] : o.points) points.push_back({{"qat_fraction", f}, {"loss", l}});
        optima.push_back({{"group", o.group},
                          {"total_steps", o.total_steps},
                          {"points", points},
                          {"fitted", o.fitted},
                          {"convex", o.convex},
                          {"optimum_fraction", o.fitted ? json(o.optimum_fraction) : json(nullptr)},
                          {"optimum_loss", o.fitted ? json(o.optimum_loss) : json(nullptr)},
                          {"rms_residual", o.fitted ? json(o.rms_residual) : json(nullptr)},
                          {"planner_fraction", o.planner_fraction ? json(*o.planner_fraction) : json(nullptr)},
                          {"note", o.note}});
    }
    json out = {{"cells", cells}, {"comparisons", comparisons}, {"metrics", spec.metrics}, {"confidence", 0.95}};
    if (!optima.empty()) out["qat_fraction_optima"] = optima;
    return out.dump();
}

std::string result_text(const ExperimentSpec& spec, const ExperimentResult& result) {
    std::string out;
    char buf[512];
    auto cell_line = [&](const std::string& label, const std::vector<MetricSummary>& metrics) {
        std::snprintf(buf, sizeof buf, "%-36s", label.c_str());
        out += buf;
        for (const std::string& metric : spec.metrics) {
            std::string text = "-";
            for (const MetricSummary& m : metrics)
                if (m.metric == metric) {
                    text = fmt(metric, m.value.mean);
                    if (std::isfinite(m.value.ci.low))
                        text += " [" + fmt(metric, m.value.ci.low) + ", " + fmt(metric, m.value.ci.high) + "]";
                    text += " n=" + std::to_string(m.value.n);
                }
            std::snprintf(buf, sizeof buf, "  %-34s", text.c_str());
            out += buf;
        }
        out += "\n";
    };
    std::snprintf(buf, sizeof buf, "%-36s", "cell");
    out += buf;
    for (const std::string& metric : spec.metrics) {
        std::snprintf(buf, sizeof buf, "  %-34s", (metric + (is_rate(metric) ? " %" : "") + " [95 % CI]").c_str());
        out += buf;
    }
    out += "\n";
    for (const CellSummary& c : result.cells) cell_line(c.cell->key, c.metrics);
    if (!result.comparisons.empty()) out += "\ndifferences (a − b, paired by replicate seed)\n";
    for (const ComparisonSummary& c : result.comparisons) cell_line(c.comparison->name + ": " + c.a + " − " + c.b, c.metrics);
    if (!result.qat_fraction_optima.empty()) out += "\nmeasured optimum QAT fraction per budget (quadratic fit of the mean loss)\n";
    for (const QatFractionOptimum& o : result.qat_fraction_optima) {
        char f_hat[32] = "-";
        if (o.planner_fraction) std::snprintf(f_hat, sizeof f_hat, "%.3f", *o.planner_fraction);
        const std::string planner = f_hat;
        if (o.fitted)
            std::snprintf(buf, sizeof buf, "%-36s  optimum f = %.3f (fitted loss %.4f, rms residual %.2g)%s  planner f = %s\n",
                          o.group.c_str(), o.optimum_fraction, o.optimum_loss, o.rms_residual,
                          o.convex ? "" : " at an end of the range", planner.c_str());
        else
            std::snprintf(buf, sizeof buf, "%-36s  %s  planner f = %s\n", o.group.c_str(), o.note.c_str(), planner.c_str());
        out += buf;
    }
    return out;
}

}  // namespace ql::experiments
