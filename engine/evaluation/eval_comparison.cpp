// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/eval_comparison.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "engine/core/errors.h"
#include "engine/core/not_a_number.h"
#include "engine/data/synthetic_tasks.h"

namespace ql::evaluation {
namespace {

using nlohmann::ordered_json;

constexpr uint64_t kComparisonGolden = 0x9E3779B97F4A7C15ULL;

// Categories (or kinds) in order of first appearance, with their counts.
class ComparisonTally {
public:
    void add(const std::string& name, bool success) {
        auto it = index_.find(name);
        if (it == index_.end()) {
            it = index_.emplace(name, counts_.size()).first;
            counts_.push_back({name, {0, 0}});
        }
        counts_[it->second].second.first += success ? 1 : 0;
        counts_[it->second].second.second += 1;
    }
    std::vector<std::pair<std::string, RateInterval>> rates(double confidence) const {
        std::vector<std::pair<std::string, RateInterval>> out;
        for (const auto& [name, c] : counts_) out.emplace_back(name, rate_interval(c.first, c.second, confidence));
        return out;
    }

private:
    std::unordered_map<std::string, size_t> index_;
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> counts_;
};

// Uniform index in [0, n) from a splitmix64 stream: Lemire, "Fast random integer generation in
// an interval" (2019), multiply-shift with rejection of the biased low products.
class ComparisonIndexStream {
public:
    explicit ComparisonIndexStream(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        const uint64_t x = mix64(state_);
        state_ += kComparisonGolden;
        return x;
    }
    uint64_t below(uint64_t n) {
        unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
        uint64_t low = static_cast<uint64_t>(m);
        if (low < n) {
            const uint64_t threshold = (0 - n) % n;
            while (low < threshold) {
                m = static_cast<unsigned __int128>(next()) * n;
                low = static_cast<uint64_t>(m);
            }
        }
        return static_cast<uint64_t>(m >> 64);
    }

private:
    uint64_t state_;
};

double comparison_percentile(const std::vector<double>& sorted, double q) {
    const double r = q * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(r));
    if (lo + 1 >= sorted.size()) return sorted.back();
    return sorted[lo] + (r - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

ordered_json comparison_number(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

ordered_json comparison_rate_json(const RateInterval& r) {
    return ordered_json{{"successes", r.successes}, {"trials", r.trials}, {"rate", comparison_number(r.rate)},
                        {"ci_low", comparison_number(r.ci.low)}, {"ci_high", comparison_number(r.ci.high)}};
}

ordered_json comparison_rates_json(const std::vector<std::pair<std::string, RateInterval>>& rates) {
    ordered_json j = ordered_json::object();
    for (const auto& [name, r] : rates) j[name] = comparison_rate_json(r);
    return j;
}

ordered_json comparison_table_json(const PairedTable& t) {
    ordered_json j;
    j["category"] = t.category;
    j["items"] = t.items;
    j["both_right"] = t.both_right;
    j["right_to_wrong"] = t.right_to_wrong;
    j["wrong_to_right"] = t.wrong_to_right;
    j["both_wrong"] = t.both_wrong;
    j["baseline_rate"] = comparison_number(t.baseline_rate);
    j["model_rate"] = comparison_number(t.model_rate);
    j["difference"] = comparison_number(t.difference);
    j["ci_low"] = comparison_number(t.bootstrap.low);
    j["ci_high"] = comparison_number(t.bootstrap.high);
    j["mcnemar_p"] = comparison_number(t.mcnemar_p);
    j["right_to_wrong_ids"] = t.right_to_wrong_ids;
    j["wrong_to_right_ids"] = t.wrong_to_right_ids;
    return j;
}

// Shortest round-trip text; empty for NaN (CSV has no null).
std::string comparison_cell(double v) {
    if (!std::isfinite(v)) return "";
    char buffer[64];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof(buffer), v).ptr);
}

PairedTable comparison_table(const std::string& category, const std::vector<const ItemOutcome*>& base,
                             const std::vector<const ItemOutcome*>& model, const BootstrapOptions& options, uint64_t stream_seed) {
    PairedTable t;
    t.category = category;
    t.items = static_cast<int64_t>(base.size());
    std::vector<uint8_t> b(base.size()), m(base.size());
    for (size_t i = 0; i < base.size(); ++i) {
        b[i] = base[i]->passed;
        m[i] = model[i]->passed;
        if (b[i] && m[i]) ++t.both_right;
        else if (b[i]) t.right_to_wrong++, t.right_to_wrong_ids.push_back(base[i]->id);
        else if (m[i]) t.wrong_to_right++, t.wrong_to_right_ids.push_back(base[i]->id);
        else ++t.both_wrong;
    }
    const double n = static_cast<double>(t.items);
    t.baseline_rate = t.items ? static_cast<double>(t.both_right + t.right_to_wrong) / n : kNaN;
    t.model_rate = t.items ? static_cast<double>(t.both_right + t.wrong_to_right) / n : kNaN;
    t.difference = t.items ? static_cast<double>(t.wrong_to_right - t.right_to_wrong) / n : kNaN;
    t.bootstrap = paired_bootstrap_interval(b, m, options.resamples, stream_seed, options.confidence);
    t.mcnemar_p = mcnemar_exact_p(t.right_to_wrong, t.wrong_to_right);
    return t;
}

}  // namespace

RateInterval rate_interval(int64_t successes, int64_t trials, double confidence) {
    RateInterval r;
    r.successes = successes;
    r.trials = trials;
    if (trials == 0) {
        r.rate = kNaN;
        r.ci = {kNaN, kNaN};
        return r;
    }
    r.rate = static_cast<double>(successes) / static_cast<double>(trials);
    r.ci = experiments::wilson_interval(successes, trials, confidence);
    return r;
}

ModelSummary summarize(const ModelEvalReport& report, double confidence) {
    ModelSummary s;
    s.model = report.model;
    ComparisonTally categories, constraints, variants, consistency;
    int64_t passed = 0, json_valid = 0, json_items = 0, names = 0, arguments = 0, tool_items = 0;
    std::unordered_map<std::string, bool> passed_by_id;
    for (const auto& o : report.items) passed_by_id[o.id] = o.passed;
    for (const auto& o : report.items) {
        passed += o.passed ? 1 : 0;
        categories.add(o.category, o.passed);
        if (o.json_valid) {
            ++json_items;
            json_valid += *o.json_valid ? 1 : 0;
        }
        if (o.tool_name_correct) {
            ++tool_items;
            names += *o.tool_name_correct ? 1 : 0;
            arguments += o.tool_arguments_correct.value_or(false) ? 1 : 0;
        }
        if (o.check == "instructions")
            for (const auto& d : o.details) constraints.add(d.name, d.passed);
        if (!o.variant.empty()) {
            variants.add(o.variant, o.passed);
            const auto original = passed_by_id.find(o.variant_of);
            if (original != passed_by_id.end() && original->second) consistency.add(o.variant, o.passed);
        }
    }
    s.overall = rate_interval(passed, static_cast<int64_t>(report.items.size()), confidence);
    s.categories = categories.rates(confidence);
    s.json_valid = rate_interval(json_valid, json_items, confidence);
    s.tool_name = rate_interval(names, tool_items, confidence);
    s.tool_arguments = rate_interval(arguments, tool_items, confidence);
    s.constraints = constraints.rates(confidence);
    s.variants = variants.rates(confidence);
    s.variant_consistency = consistency.rates(confidence);
    return s;
}

experiments::Interval paired_bootstrap_interval(const std::vector<uint8_t>& baseline, const std::vector<uint8_t>& model,
                                                int64_t resamples, uint64_t stream_seed, double confidence) {
    if (baseline.size() != model.size()) throw std::invalid_argument("paired bootstrap: the two sides differ in length");
    if (resamples < 2) throw std::invalid_argument("paired bootstrap: need at least 2 resamples");
    if (!(confidence > 0 && confidence < 1)) throw std::invalid_argument("paired bootstrap: confidence must be in (0, 1)");
    const size_t n = baseline.size();
    if (n == 0) return {kNaN, kNaN};
    std::vector<int> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = int(model[i] != 0) - int(baseline[i] != 0);
    ComparisonIndexStream stream(stream_seed);
    std::vector<double> means(static_cast<size_t>(resamples));
    for (auto& mean : means) {
        int64_t sum = 0;
        for (size_t k = 0; k < n; ++k) sum += d[stream.below(n)];
        mean = static_cast<double>(sum) / static_cast<double>(n);
    }
    std::sort(means.begin(), means.end());
    return {comparison_percentile(means, (1 - confidence) / 2), comparison_percentile(means, (1 + confidence) / 2)};
}

double mcnemar_exact_p(int64_t right_to_wrong, int64_t wrong_to_right) {
    const int64_t n = right_to_wrong + wrong_to_right;
    if (n == 0) return 1;
    const int64_t k = std::min(right_to_wrong, wrong_to_right);
    // P(X <= k) for X ~ Bin(n, 1/2) is I_{1/2}(n - k, k + 1) (the binomial CDF as a regularized
    // incomplete beta function, DLMF 8.17.5); as statsmodels' mcnemar(exact=True).
    const double cdf = experiments::regularized_incomplete_beta(static_cast<double>(n - k), static_cast<double>(k + 1), 0.5);
    return std::min(1.0, 2 * cdf);
}

EvalComparison compare(const std::vector<ModelEvalReport>& reports, const BootstrapOptions& options) {
    if (reports.empty()) throw UserError("eval comparison: no reports");
    const ModelEvalReport& base = reports.front();
    EvalComparison c;
    c.suite_sha256 = base.suite_sha256;
    c.bootstrap = options;
    std::unordered_map<std::string, size_t> base_index;
    for (size_t i = 0; i < base.items.size(); ++i)
        if (!base_index.emplace(base.items[i].id, i).second)
            throw UserError("eval report of " + base.model + ": item " + base.items[i].id + " appears twice");
    std::vector<std::string> categories;
    {
        std::set<std::string> seen;
        for (const auto& o : base.items)
            if (seen.insert(o.category).second) categories.push_back(o.category);
    }
    for (const auto& r : reports) c.summaries.push_back(summarize(r, options.confidence));
    for (size_t m = 1; m < reports.size(); ++m) {
        const ModelEvalReport& model = reports[m];
        if (model.suite_sha256 != base.suite_sha256)
            throw UserError("eval report of " + model.model + " is for another suite (sha256 " + model.suite_sha256 + ") than " +
                            base.model + "'s (" + base.suite_sha256 + ")");
        if (model.items.size() != base.items.size())
            throw UserError("eval report of " + model.model + " has " + std::to_string(model.items.size()) + " items, " + base.model +
                            "'s " + std::to_string(base.items.size()));
        // The model's outcome for each baseline item, in the baseline's order.
        std::vector<const ItemOutcome*> paired(base.items.size(), nullptr);
        for (const auto& o : model.items) {
            const auto it = base_index.find(o.id);
            if (it == base_index.end()) throw UserError("eval report of " + model.model + " has item " + o.id + ", which " + base.model + "'s has not");
            if (paired[it->second]) throw UserError("eval report of " + model.model + ": item " + o.id + " appears twice");
            paired[it->second] = &o;
        }
        ModelComparison mc;
        mc.model = model.model;
        mc.baseline = base.model;
        std::vector<const ItemOutcome*> all_base;
        for (const auto& o : base.items) all_base.push_back(&o);
        // Table t draws from the stream seeded with seed + t: t = 0 overall, then the categories.
        mc.overall = comparison_table("overall", all_base, paired, options, options.seed);
        for (size_t k = 0; k < categories.size(); ++k) {
            std::vector<const ItemOutcome*> b, p;
            for (size_t i = 0; i < base.items.size(); ++i) {
                if (base.items[i].category != categories[k]) continue;
                b.push_back(&base.items[i]);
                p.push_back(paired[i]);
            }
            mc.categories.push_back(comparison_table(categories[k], b, p, options, options.seed + 1 + k));
        }
        c.comparisons.push_back(std::move(mc));
    }
    return c;
}

ordered_json comparison_json(const EvalComparison& c) {
    ordered_json j;
    j["suite_sha256"] = c.suite_sha256;
    j["bootstrap"] = ordered_json{{"resamples", c.bootstrap.resamples}, {"seed", c.bootstrap.seed}, {"confidence", c.bootstrap.confidence}};
    ordered_json summaries = ordered_json::array();
    for (const auto& s : c.summaries) {
        ordered_json sj;
        sj["model"] = s.model;
        sj["overall"] = comparison_rate_json(s.overall);
        sj["categories"] = comparison_rates_json(s.categories);
        sj["json_valid"] = comparison_rate_json(s.json_valid);
        sj["tool_name"] = comparison_rate_json(s.tool_name);
        sj["tool_arguments"] = comparison_rate_json(s.tool_arguments);
        sj["constraints"] = comparison_rates_json(s.constraints);
        sj["variants"] = comparison_rates_json(s.variants);
        sj["variant_consistency"] = comparison_rates_json(s.variant_consistency);
        summaries.push_back(std::move(sj));
    }
    j["summaries"] = std::move(summaries);
    ordered_json comparisons = ordered_json::array();
    for (const auto& mc : c.comparisons) {
        ordered_json cj;
        cj["model"] = mc.model;
        cj["baseline"] = mc.baseline;
        cj["overall"] = comparison_table_json(mc.overall);
        ordered_json cats = ordered_json::array();
        for (const auto& t : mc.categories) cats.push_back(comparison_table_json(t));
        cj["categories"] = std::move(cats);
        comparisons.push_back(std::move(cj));
    }
    j["comparisons"] = std::move(comparisons);
    return j;
}

std::string summary_csv(const EvalComparison& c) {
    std::string out = "model,table,name,successes,trials,rate,ci_low,ci_high\n";
    auto row = [&](const std::string& model, const char* table, const std::string& name, const RateInterval& r) {
        out += csv_field(model) + "," + table + "," + csv_field(name) + "," + std::to_string(r.successes) + "," +
               std::to_string(r.trials) + "," + comparison_cell(r.rate) + "," + comparison_cell(r.ci.low) + "," +
               comparison_cell(r.ci.high) + "\n";
    };
    for (const auto& s : c.summaries) {
        row(s.model, "overall", "overall", s.overall);
        for (const auto& [name, r] : s.categories) row(s.model, "category", name, r);
        row(s.model, "json_valid", "json_valid", s.json_valid);
        row(s.model, "tool_name", "tool_name", s.tool_name);
        row(s.model, "tool_arguments", "tool_arguments", s.tool_arguments);
        for (const auto& [name, r] : s.constraints) row(s.model, "constraint", name, r);
        for (const auto& [name, r] : s.variants) row(s.model, "variant", name, r);
        for (const auto& [name, r] : s.variant_consistency) row(s.model, "variant_consistency", name, r);
    }
    return out;
}

std::string paired_csv(const EvalComparison& c) {
    std::string out =
        "model,baseline,category,items,both_right,right_to_wrong,wrong_to_right,both_wrong,baseline_rate,model_rate,difference,ci_low,"
        "ci_high,mcnemar_p\n";
    for (const auto& mc : c.comparisons) {
        auto row = [&](const PairedTable& t) {
            out += csv_field(mc.model) + "," + csv_field(mc.baseline) + "," + csv_field(t.category) + "," + std::to_string(t.items) + "," +
                   std::to_string(t.both_right) + "," + std::to_string(t.right_to_wrong) + "," + std::to_string(t.wrong_to_right) + "," +
                   std::to_string(t.both_wrong) + "," + comparison_cell(t.baseline_rate) + "," + comparison_cell(t.model_rate) + "," +
                   comparison_cell(t.difference) + "," + comparison_cell(t.bootstrap.low) + "," + comparison_cell(t.bootstrap.high) + "," +
                   comparison_cell(t.mcnemar_p) + "\n";
        };
        row(mc.overall);
        for (const auto& t : mc.categories) row(t);
    }
    return out;
}

std::string flips_csv(const EvalComparison& c) {
    std::string out = "model,baseline,category,id,direction\n";
    for (const auto& mc : c.comparisons) {
        for (const auto& t : mc.categories) {
            for (const auto& id : t.right_to_wrong_ids)
                out += csv_field(mc.model) + "," + csv_field(mc.baseline) + "," + csv_field(t.category) + "," + csv_field(id) + ",right_to_wrong\n";
            for (const auto& id : t.wrong_to_right_ids)
                out += csv_field(mc.model) + "," + csv_field(mc.baseline) + "," + csv_field(t.category) + "," + csv_field(id) + ",wrong_to_right\n";
        }
    }
    return out;
}

}  // namespace ql::evaluation
