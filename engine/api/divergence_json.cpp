// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/divergence_json.h"

#include <cmath>
#include <limits>

#include "engine/core/errors.h"

namespace ql {
namespace {

using nlohmann::json;

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json number(const std::optional<double>& v) { return v ? number(*v) : json(nullptr); }

json hidden_json(const HiddenError& e) {
    return {{"rel_l2", number(e.rel_l2)}, {"cosine", number(e.cosine)}, {"sqnr_db", number(e.sqnr_db)}};
}

json split_side(const HiddenError& e, const std::optional<double>& kl, const std::optional<double>* increment) {
    json j = hidden_json(e);
    j["kl"] = number(kl);
    if (increment) j["kl_increment"] = number(*increment);
    return j;
}

json split_json(const ErrorSplit& s) {
    return {{"propagated", split_side(s.propagated, s.kl_propagated, &s.kl_increment)},
            {"isolated", split_side(s.isolated, s.kl_isolated, nullptr)}};
}

json doubles(const std::vector<double>& v) {
    json a = json::array();
    for (double x : v) a.push_back(number(x));
    return a;
}

// Reading back: every field checked, errors name the document and the field.
class Reader {
public:
    explicit Reader(std::string source) : source_(std::move(source)) {}

    const json& at(const json& o, const char* key, const std::string& where) const {
        if (!o.is_object() || !o.contains(key)) fail(where + "." + key, "is missing");
        return o.at(key);
    }
    // null = NaN (or `null_value`).
    double num(const json& o, const char* key, const std::string& where,
               double null_value = std::numeric_limits<double>::quiet_NaN()) const {
        const json& v = at(o, key, where);
        if (v.is_null()) return null_value;
        if (!v.is_number()) fail(where + "." + key, "is not a number");
        return v.get<double>();
    }
    std::optional<double> opt(const json& o, const char* key, const std::string& where) const {
        if (!o.is_object() || !o.contains(key) || o.at(key).is_null()) return std::nullopt;
        if (!o.at(key).is_number()) fail(where + "." + key, "is not a number");
        return o.at(key).get<double>();
    }
    int64_t integer(const json& o, const char* key, const std::string& where) const {
        const json& v = at(o, key, where);
        if (!v.is_number_integer()) fail(where + "." + key, "is not an integer");
        return v.get<int64_t>();
    }
    std::string text(const json& o, const char* key, const std::string& where) const {
        const json& v = at(o, key, where);
        if (!v.is_string()) fail(where + "." + key, "is not a string");
        return v.get<std::string>();
    }
    const json& array(const json& o, const char* key, const std::string& where) const {
        const json& v = at(o, key, where);
        if (!v.is_array()) fail(where + "." + key, "is not an array");
        return v;
    }
    HiddenError hidden(const json& o, const std::string& where) const {
        HiddenError h;
        h.rel_l2 = num(o, "rel_l2", where);
        h.cosine = num(o, "cosine", where);
        h.sqnr_db = num(o, "sqnr_db", where, std::numeric_limits<double>::infinity());
        return h;
    }
    ErrorSplit split(const json& o, const std::string& where) const {
        ErrorSplit s;
        const json& p = at(o, "propagated", where);
        const json& i = at(o, "isolated", where);
        s.propagated = hidden(p, where + ".propagated");
        s.isolated = hidden(i, where + ".isolated");
        s.kl_propagated = opt(p, "kl", where + ".propagated");
        s.kl_increment = opt(p, "kl_increment", where + ".propagated");
        s.kl_isolated = opt(i, "kl", where + ".isolated");
        return s;
    }
    std::vector<double> doubles(const json& o, const char* key, const std::string& where) const {
        std::vector<double> v;
        for (const json& x : array(o, key, where)) {
            if (!x.is_null() && !x.is_number()) fail(where + "." + key, "holds a value that is not a number");
            v.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : x.get<double>());
        }
        return v;
    }
    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw UserError(source_ + ": the divergence report's field '" + field + "' " + what);
    }

private:
    std::string source_;
};

}  // namespace

json token_divergence_json(const TokenDivergenceSummary& s) {
    return {{"tokens", s.tokens},         {"kl_mean", number(s.kl_mean)},   {"kl_median", number(s.kl_median)},
            {"kl_p90", number(s.kl_p90)}, {"kl_p95", number(s.kl_p95)},     {"kl_p99", number(s.kl_p99)},
            {"kl_max", number(s.kl_max)}, {"same_top1", number(s.same_top1)}, {"delta_p_mean", number(s.delta_p_mean)},
            {"rms_delta_p", number(s.rms_delta_p)}, {"ppl_fp", number(s.ppl_fp)}, {"ppl_q", number(s.ppl_q)},
            {"delta_ppl", number(s.delta_ppl)}};
}

json divergence_report_json(const DivergenceReport& r) {
    json blocks = json::array();
    std::vector<double> prop, iso, inc;
    for (const BlockDivergence& b : r.blocks) {
        const json whole = split_json(b.block);
        blocks.push_back({{"name", b.name},
                          {"propagated", whole.at("propagated")},
                          {"isolated", whole.at("isolated")},
                          {"attention", split_json(b.attention)},
                          {"mlp", split_json(b.mlp)}});
        prop.push_back(b.block.kl_propagated.value_or(std::nan("")));
        iso.push_back(b.block.kl_isolated.value_or(std::nan("")));
        inc.push_back(b.block.kl_increment.value_or(std::nan("")));
    }
    json logits = nullptr;
    if (r.kl) {
        double sum = r.embeddings_kl.value_or(0) + r.head_kl_increment.value_or(0);
        for (double v : inc) sum += v;
        logits = {{"kl", number(r.kl)},
                  {"propagated", doubles(prop)},
                  {"isolated", doubles(iso)},
                  {"increments", doubles(inc)},
                  {"embeddings_increment", number(r.embeddings_kl)},
                  {"head_increment", number(r.head_kl_increment)},
                  {"increments_sum", number(sum)},
                  {"isolated_sum", number(r.isolated_kl_sum)}};
    }
    json embeddings = hidden_json(r.embeddings);
    embeddings["kl"] = number(r.embeddings_kl);
    json layers = json::array();
    for (const LayerDivergence& l : r.layers)
        layers.push_back({{"name", l.name}, {"block", l.block}, {"rel_l2", number(l.rel_l2)}, {"sqnr_db", number(l.sqnr_db)}});
    json worst = json::array();
    for (const TokenDivergence& t : r.worst_tokens) {
        json wl = json::array();
        for (const auto& [name, e] : t.worst_layers) wl.push_back({{"name", name}, {"rel_l2", number(e)}});
        worst.push_back({{"example", t.example},
                         {"position", t.position},
                         {"domain", t.domain},
                         {"context", t.context},
                         {"target", t.target},
                         {"continuation", t.continuation},
                         {"kl", number(t.kl)},
                         {"fp_top1", t.fp_top1},
                         {"p_fp_top1", number(t.p_fp_top1)},
                         {"q_top1", t.q_top1},
                         {"p_q_top1", number(t.p_q_top1)},
                         {"p_fp_target", number(t.p_fp_target)},
                         {"p_q_target", number(t.p_q_target)},
                         {"delta_p", number(t.delta_p)},
                         {"block_propagated", doubles(t.block_propagated)},
                         {"block_isolated", doubles(t.block_isolated)},
                         {"worst_layers", wl}});
    }
    return {{"model", r.model},
            {"quantized", r.quantized},
            {"recipe", r.recipe},
            {"data", r.data},
            {"split", r.split},
            {"encoder", r.encoder},
            {"examples", r.examples},
            {"scored_tokens", r.scored_tokens},
            {"embeddings", embeddings},
            {"blocks", blocks},
            {"final_hidden", hidden_json(r.final_hidden)},
            {"sentence_cosine", number(r.sentence_cosine)},
            {"logits", logits},
            {"tokens", r.tokens ? token_divergence_json(*r.tokens) : json(nullptr)},
            {"layers", layers},
            {"worst_tokens", worst},
            {"seconds", number(r.seconds)}};
}

DivergenceReport parse_divergence_report(const std::string& text, const std::string& source) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw UserError(source + ": the divergence report is not a JSON object");
    const Reader rd(source);
    DivergenceReport r;
    r.model = rd.text(j, "model", "");
    r.quantized = rd.text(j, "quantized", "");
    r.recipe = rd.text(j, "recipe", "");
    r.data = rd.text(j, "data", "");
    r.split = rd.text(j, "split", "");
    const json& enc = rd.at(j, "encoder", "");
    if (!enc.is_boolean()) rd.fail("encoder", "is not true or false");
    r.encoder = enc.get<bool>();
    r.examples = rd.integer(j, "examples", "");
    r.scored_tokens = rd.integer(j, "scored_tokens", "");
    r.seconds = rd.num(j, "seconds", "");
    const json& e = rd.at(j, "embeddings", "");
    r.embeddings = rd.hidden(e, "embeddings");
    r.embeddings_kl = rd.opt(e, "kl", "embeddings");
    r.final_hidden = rd.hidden(rd.at(j, "final_hidden", ""), "final_hidden");
    r.sentence_cosine = rd.opt(j, "sentence_cosine", "");
    const json& blocks = rd.array(j, "blocks", "");
    for (size_t i = 0; i < blocks.size(); ++i) {
        const std::string w = "blocks[" + std::to_string(i) + "]";
        BlockDivergence b;
        b.name = rd.text(blocks[i], "name", w);
        b.block = rd.split(blocks[i], w);
        b.attention = rd.split(rd.at(blocks[i], "attention", w), w + ".attention");
        b.mlp = rd.split(rd.at(blocks[i], "mlp", w), w + ".mlp");
        r.blocks.push_back(std::move(b));
    }
    const json& logits = rd.at(j, "logits", "");
    if (!logits.is_null()) {
        r.kl = rd.opt(logits, "kl", "logits");
        r.head_kl_increment = rd.opt(logits, "head_increment", "logits");
        r.isolated_kl_sum = rd.opt(logits, "isolated_sum", "logits");
    }
    const json& tokens = rd.at(j, "tokens", "");
    if (!tokens.is_null()) {
        TokenDivergenceSummary s;
        s.tokens = rd.integer(tokens, "tokens", "tokens");
        s.kl_mean = rd.num(tokens, "kl_mean", "tokens");
        s.kl_median = rd.num(tokens, "kl_median", "tokens");
        s.kl_p90 = rd.num(tokens, "kl_p90", "tokens");
        s.kl_p95 = rd.num(tokens, "kl_p95", "tokens");
        s.kl_p99 = rd.num(tokens, "kl_p99", "tokens");
        s.kl_max = rd.num(tokens, "kl_max", "tokens");
        s.same_top1 = rd.num(tokens, "same_top1", "tokens");
        s.delta_p_mean = rd.num(tokens, "delta_p_mean", "tokens");
        s.rms_delta_p = rd.num(tokens, "rms_delta_p", "tokens");
        s.ppl_fp = rd.num(tokens, "ppl_fp", "tokens");
        s.ppl_q = rd.num(tokens, "ppl_q", "tokens");
        s.delta_ppl = rd.num(tokens, "delta_ppl", "tokens");
        r.tokens = s;
    }
    const json& layers = rd.array(j, "layers", "");
    for (size_t i = 0; i < layers.size(); ++i) {
        const std::string w = "layers[" + std::to_string(i) + "]";
        LayerDivergence l;
        l.name = rd.text(layers[i], "name", w);
        l.block = rd.integer(layers[i], "block", w);
        l.rel_l2 = rd.num(layers[i], "rel_l2", w);
        l.sqnr_db = rd.num(layers[i], "sqnr_db", w, std::numeric_limits<double>::infinity());
        r.layers.push_back(std::move(l));
    }
    const json& worst = rd.array(j, "worst_tokens", "");
    for (size_t i = 0; i < worst.size(); ++i) {
        const std::string w = "worst_tokens[" + std::to_string(i) + "]";
        const json& o = worst[i];
        TokenDivergence t;
        t.example = rd.integer(o, "example", w);
        t.position = rd.integer(o, "position", w);
        t.domain = rd.text(o, "domain", w);
        t.context = rd.text(o, "context", w);
        t.target = rd.text(o, "target", w);
        t.continuation = rd.text(o, "continuation", w);
        t.kl = rd.num(o, "kl", w);
        t.fp_top1 = rd.text(o, "fp_top1", w);
        t.q_top1 = rd.text(o, "q_top1", w);
        t.p_fp_top1 = rd.num(o, "p_fp_top1", w);
        t.p_q_top1 = rd.num(o, "p_q_top1", w);
        t.p_fp_target = rd.num(o, "p_fp_target", w);
        t.p_q_target = rd.num(o, "p_q_target", w);
        t.delta_p = rd.num(o, "delta_p", w);
        t.block_propagated = rd.doubles(o, "block_propagated", w);
        t.block_isolated = rd.doubles(o, "block_isolated", w);
        const json& wl = rd.array(o, "worst_layers", w);
        for (size_t k = 0; k < wl.size(); ++k)
            t.worst_layers.emplace_back(rd.text(wl[k], "name", w + ".worst_layers[" + std::to_string(k) + "]"),
                                        rd.num(wl[k], "rel_l2", w + ".worst_layers[" + std::to_string(k) + "]"));
        if (t.block_propagated.size() != r.blocks.size() || t.block_isolated.size() != r.blocks.size())
            rd.fail(w + ".block_propagated", "does not hold one value per block");
        r.worst_tokens.push_back(std::move(t));
    }
    return r;
}

}  // namespace ql
