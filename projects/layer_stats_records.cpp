// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/layer_stats_records.h"

#include <cmath>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"

namespace ql::projects {
namespace {

using nlohmann::json;

// JSON has no NaN / Inf: they travel as strings.
json number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

double read_number(const json& j) {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    throw std::invalid_argument("expected a number, got " + j.dump());
}

double get(const json& j, const char* key, double fallback = 0) { return j.contains(key) ? read_number(j.at(key)) : fallback; }

json numbers(const std::vector<double>& v) {
    json a = json::array();
    for (double x : v) a.push_back(number(x));
    return a;
}

std::vector<double> read_numbers(const json& j) {
    std::vector<double> v;
    for (const json& x : j) v.push_back(read_number(x));
    return v;
}

json histogram_json(const HistogramData& h) {
    return {{"lo", number(h.lo)}, {"hi", number(h.hi)}, {"counts", numbers(h.counts)}, {"underflow", h.underflow}, {"overflow", h.overflow}};
}

json tensor_summary(const TensorStatistics& s) {
    json p = json::array(), top = json::array();
    for (const auto& [q, v] : s.percentiles) p.push_back({q, number(v)});
    for (const OutlierEntry& o : s.top_outliers) top.push_back({{"index", o.index}, {"value", number(o.value)}});
    return {{"numel", s.numel},         {"amax", number(s.amax)},
            {"mean", number(s.mean)},   {"std", number(s.std)},
            {"kurtosis", number(s.kurtosis)}, {"max_over_mean_abs", number(s.max_over_mean_abs)},
            {"percentiles", p},         {"top_outliers", top},
            {"nan_count", s.nan_count}, {"inf_count", s.inf_count},
            {"zero_count", s.zero_count}};
}

void read_summary(const json& j, TensorStatistics& s) {
    s.numel = j.value("numel", int64_t{0});
    s.amax = get(j, "amax");
    s.mean = get(j, "mean");
    s.std = get(j, "std");
    s.kurtosis = get(j, "kurtosis");
    s.max_over_mean_abs = get(j, "max_over_mean_abs");
    s.percentiles.clear();
    for (const json& p : j.value("percentiles", json::array())) s.percentiles.emplace_back(read_number(p.at(0)), read_number(p.at(1)));
    s.top_outliers.clear();
    for (const json& o : j.value("top_outliers", json::array()))
        s.top_outliers.push_back({o.at("index").get<std::vector<int64_t>>(), read_number(o.at("value"))});
    s.nan_count = j.value("nan_count", int64_t{0});
    s.inf_count = j.value("inf_count", int64_t{0});
    s.zero_count = j.value("zero_count", int64_t{0});
}

// The fit's scalars (block scales and their histogram are records of their own).
json fit_summary(const FormatFit& f) {
    return {{"format", f.format},
            {"settings", f.settings},
            {"error", f.error},
            {"clipped_fraction", number(f.clipped_fraction)},
            {"weight_mse", number(f.weight_mse)},
            {"weight_sqnr_db", number(f.weight_sqnr_db)},
            {"output_sqnr_db", number(f.output_sqnr_db)},
            {"wa_output_sqnr_db", number(f.wa_output_sqnr_db)},
            {"input_clipped_fraction", number(f.input_clipped_fraction)},
            {"scale_kind", f.scale_kind},
            {"block_scale_stride", f.block_scale_stride},
            {"block_count", f.block_count},
            {"global_scale", number(f.global_scale)},
            {"grid", numbers(f.grid)},
            {"clip_threshold", number(f.clip_threshold)}};
}

FormatFit read_fit(const json& j) {
    FormatFit f;
    f.format = j.at("format").get<std::string>();
    f.settings = j.value("settings", "");
    f.error = j.value("error", "");
    f.clipped_fraction = get(j, "clipped_fraction");
    f.weight_mse = get(j, "weight_mse");
    f.weight_sqnr_db = get(j, "weight_sqnr_db");
    f.output_sqnr_db = get(j, "output_sqnr_db");
    f.wa_output_sqnr_db = get(j, "wa_output_sqnr_db");
    f.input_clipped_fraction = get(j, "input_clipped_fraction");
    f.scale_kind = j.value("scale_kind", "");
    f.block_scale_stride = j.value("block_scale_stride", int64_t{1});
    f.block_count = j.value("block_count", int64_t{0});
    f.global_scale = get(j, "global_scale", 1);
    f.grid = read_numbers(j.value("grid", json::array()));
    f.clip_threshold = get(j, "clip_threshold");
    return f;
}

LayerStats record(const std::string& layer, const std::string& kind, std::int64_t step, const std::vector<double>& values,
                  double lo = 0, double hi = 0, const json& extra = json::object()) {
    LayerStats s;
    s.layer = layer;
    s.kind = kind;
    s.step = step;
    s.range_min = lo;
    s.range_max = hi;
    s.values.assign(values.begin(), values.end());
    s.outliers_json = extra.dump();
    return s;
}

LayerStats histogram_record(const std::string& layer, const std::string& kind, std::int64_t step, const HistogramData& h,
                            json extra = json::object()) {
    extra["underflow"] = h.underflow;
    extra["overflow"] = h.overflow;
    return record(layer, kind, step, h.counts, h.lo, h.hi, extra);
}

HistogramData read_histogram(const LayerStats& r, const json& extra) {
    HistogramData h;
    h.lo = r.range_min;
    h.hi = r.range_max;
    h.counts.assign(r.values.begin(), r.values.end());
    h.underflow = get(extra, "underflow");
    h.overflow = get(extra, "overflow");
    return h;
}

json layer_json(const LayerStatistics& l) {
    json fits = json::array();
    for (const FormatFit& f : l.fits) fits.push_back(fit_summary(f));
    return {{"layer_kind", l.kind},
            {"weight_shape", l.weight_shape},
            {"has_activation", l.has_activation},
            {"activation_rows", l.activation_rows},
            {"chosen_format", l.chosen_format},
            {"input_amax", number(l.input_amax)},
            {"input_clipped_fraction", number(l.input_clipped_fraction)},
            {"first_block", l.first_block},
            {"weight", tensor_summary(l.weight)},
            {"llm_int8", {{"threshold", l.llm_int8.threshold},
                          {"tokens", l.llm_int8.tokens},
                          {"columns", l.llm_int8.columns},
                          {"column_token_share", l.llm_int8.column_token_share},
                          {"batch_flop_share", l.llm_int8.batch_flop_share},
                          {"token_flop_share", l.llm_int8.token_flop_share}}},
            {"fits", fits}};
}

}  // namespace

std::vector<LayerStats> to_project_records(const ql::LayerStatsReport& report, std::int64_t step) {
    std::vector<LayerStats> out;
    for (const LayerStatistics& l : report.layers) {
        out.push_back(histogram_record(l.layer, "weight_histogram", step, l.weight.histogram, layer_json(l)));
        out.push_back(histogram_record(l.layer, "weight_log_histogram", step, l.weight.abs_log_histogram));
        out.push_back(record(l.layer, "channel_absmax", step, l.weight.channel_absmax));
        if (l.has_activation) {
            out.push_back(histogram_record(l.layer, "activation_histogram", step, l.activation.histogram, tensor_summary(l.activation)));
            out.push_back(histogram_record(l.layer, "activation_log_histogram", step, l.activation.abs_log_histogram));
            out.push_back(record(l.layer, "activation_channel_absmax", step, l.activation.channel_absmax));
        }
        for (const FormatFit& f : l.fits) {
            if (!f.error.empty()) continue;
            out.push_back(record(l.layer, "block_scales/" + f.format, step, f.block_scales, 0, 0,
                                 {{"scale_kind", f.scale_kind}, {"block_scale_stride", f.block_scale_stride},
                                  {"block_count", f.block_count}, {"global_scale", number(f.global_scale)}}));
            out.push_back(histogram_record(l.layer, "scale_histogram/" + f.format, step, f.scale_histogram));
        }
    }
    return out;
}

std::vector<ql::LayerStatistics> from_project_records(const std::vector<LayerStats>& records) {
    std::vector<LayerStatistics> out;
    std::map<std::string, size_t> index;
    for (const LayerStats& r : records) {
        json extra;
        try {
            extra = json::parse(r.outliers_json.empty() ? "{}" : r.outliers_json);
            auto it = index.find(r.layer);
            if (it == index.end()) {
                it = index.emplace(r.layer, out.size()).first;
                out.emplace_back();
                out.back().layer = r.layer;
            }
            LayerStatistics& l = out[it->second];
            auto fit_named = [&l](const std::string& format) -> FormatFit* {
                for (FormatFit& f : l.fits)
                    if (f.format == format) return &f;
                return nullptr;
            };
            const std::string& kind = r.kind;
            if (kind == "weight_histogram") {
                l.kind = extra.value("layer_kind", "");
                l.weight_shape = extra.value("weight_shape", std::vector<int64_t>{});
                l.has_activation = extra.value("has_activation", false);
                l.activation_rows = extra.value("activation_rows", int64_t{0});
                l.chosen_format = extra.value("chosen_format", "");
                l.input_amax = get(extra, "input_amax");
                l.input_clipped_fraction = get(extra, "input_clipped_fraction");
                l.first_block = extra.value("first_block", std::vector<float>{});
                // Projects written before the LLM.int8() account have none (threshold 0).
                if (extra.contains("llm_int8") && extra.at("llm_int8").is_object()) {
                    const json& d = extra.at("llm_int8");
                    l.llm_int8.threshold = d.value("threshold", 0.0);
                    l.llm_int8.tokens = d.value("tokens", int64_t{0});
                    l.llm_int8.columns = d.value("columns", std::vector<int64_t>{});
                    l.llm_int8.column_token_share = d.value("column_token_share", std::vector<double>{});
                    l.llm_int8.batch_flop_share = d.value("batch_flop_share", 0.0);
                    l.llm_int8.token_flop_share = d.value("token_flop_share", 0.0);
                    if (l.llm_int8.column_token_share.size() != l.llm_int8.columns.size())
                        throw std::runtime_error("layer statistics of " + r.layer + ": llm_int8.columns and column_token_share differ in length");
                }
                if (extra.contains("weight")) read_summary(extra.at("weight"), l.weight);
                l.weight.histogram = read_histogram(r, extra);
                // Scales may have been read first (records in any order): keep them.
                std::vector<FormatFit> fits;
                for (const json& f : extra.value("fits", json::array())) {
                    FormatFit fit = read_fit(f);
                    if (const FormatFit* seen = fit_named(fit.format)) {
                        fit.block_scales = seen->block_scales;
                        fit.scale_histogram = seen->scale_histogram;
                    }
                    fits.push_back(std::move(fit));
                }
                l.fits = std::move(fits);
            } else if (kind == "weight_log_histogram") {
                l.weight.abs_log_histogram = read_histogram(r, extra);
            } else if (kind == "channel_absmax") {
                l.weight.channel_absmax.assign(r.values.begin(), r.values.end());
            } else if (kind == "activation_histogram") {
                l.has_activation = true;
                read_summary(extra, l.activation);
                l.activation.histogram = read_histogram(r, extra);
            } else if (kind == "activation_log_histogram") {
                l.activation.abs_log_histogram = read_histogram(r, extra);
            } else if (kind == "activation_channel_absmax") {
                l.activation.channel_absmax.assign(r.values.begin(), r.values.end());
            } else if (kind.rfind("block_scales/", 0) == 0 || kind.rfind("scale_histogram/", 0) == 0) {
                const bool scales = kind[0] == 'b';
                const std::string format = kind.substr(kind.find('/') + 1);
                FormatFit* f = fit_named(format);
                if (!f) {
                    l.fits.emplace_back();
                    f = &l.fits.back();
                    f->format = format;
                }
                if (scales) {
                    f->block_scales.assign(r.values.begin(), r.values.end());
                } else {
                    f->scale_histogram = read_histogram(r, extra);
                }
            }
        } catch (const UserError&) {
            throw;
        } catch (const std::exception& e) {
            throw UserError("layer statistics of '" + r.layer + "' (" + r.kind + "): malformed outliers JSON: " + e.what());
        }
    }
    return out;
}

std::string layer_stats_report_json(const ql::LayerStatsReport& report) {
    json layers = json::array();
    for (const LayerStatistics& l : report.layers) {
        json j = layer_json(l);
        j["layer"] = l.layer;
        j["weight"]["histogram"] = histogram_json(l.weight.histogram);
        j["weight"]["abs_log_histogram"] = histogram_json(l.weight.abs_log_histogram);
        j["weight"]["channel_absmax"] = numbers(l.weight.channel_absmax);
        if (l.has_activation) {
            j["activation"] = tensor_summary(l.activation);
            j["activation"]["histogram"] = histogram_json(l.activation.histogram);
            j["activation"]["abs_log_histogram"] = histogram_json(l.activation.abs_log_histogram);
            j["activation"]["channel_absmax"] = numbers(l.activation.channel_absmax);
        }
        for (size_t i = 0; i < l.fits.size(); ++i) {
            j["fits"][i]["block_scales"] = numbers(l.fits[i].block_scales);
            j["fits"][i]["scale_histogram"] = histogram_json(l.fits[i].scale_histogram);
        }
        layers.push_back(j);
    }
    json out = {{"model", report.model_path}, {"formats", report.formats}, {"layers", layers}, {"seconds", report.seconds}};
    return out.dump(2) + "\n";
}

}  // namespace ql::projects
