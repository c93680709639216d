// SPDX-License-Identifier: GPL-3.0-or-later
// run_what_if: the recipe without its levers and with the chosen ones, each PTQ'd with RTN weights
// and max calibration on a small batch, their quantizers' tensors compared, and both compared
// with the FP model on a small evaluation batch.
#include "engine/api/whatif_api.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/calib/calibration_forward.h"
#include "engine/calib/calibration_observers.h"
#include "engine/core/errors.h"
#include "engine/eval/evaluator.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/loading/model_source.h"
#include "engine/models/model.h"
#include "engine/models/model_device.h"
#include "engine/models/sentence_pooling.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/recipe.h"
#include "engine/stats/format_fit.h"
#include "engine/core/not_a_number.h"

namespace ql {
namespace {


// Keys and values of every attention while data runs: through the KV quantizer's observer where
// one is installed (K after its Q/K rotation), else through the bare site hook.
class KvCapture {
public:
    KvCapture(QuantizedModel& q, int64_t rows) : q_(q), rows_(rows) {
        for (AttentionSite* site : q.model().attention_sites()) {
            Parts* p = &parts_[site->name];
            auto observe = [p, rows](const at::Tensor& k, const at::Tensor& v) {
                if (p->taken >= rows) return;
                const at::Tensor kr = k.detach().permute({0, 2, 1, 3}).reshape({-1, k.size(1), k.size(3)});
                const at::Tensor vr = v.detach().permute({0, 2, 1, 3}).reshape({-1, v.size(1), v.size(3)});
                const int64_t take = std::min<int64_t>(kr.size(0), rows - p->taken);
                p->k.push_back(kr.slice(0, 0, take).to(at::kFloat).clone());
                p->v.push_back(vr.slice(0, 0, take).to(at::kFloat).clone());
                p->taken += take;
            };
            if (KvCacheQuantizer* kv = q.find_kv_cache(site->name)) {
                kv->set_observer(observe);
            } else {
                site->hook = [observe](at::Tensor&, at::Tensor& k, at::Tensor& v) { observe(k, v); };
                bare_.push_back(site);
            }
        }
    }
    ~KvCapture() {
        for (const auto& kv : q_.kv_caches()) kv->set_observer(nullptr);
        for (AttentionSite* s : bare_) s->hook = nullptr;
    }
    KvCapture(const KvCapture&) = delete;
    KvCapture& operator=(const KvCapture&) = delete;

    std::pair<at::Tensor, at::Tensor> samples(const std::string& site) const {
        const Parts& p = parts_.at(site);
        if (p.k.empty()) return {};
        return {at::cat(p.k, 0), at::cat(p.v, 0)};  // [n, Hkv, D]
    }

private:
    struct Parts {
        std::vector<at::Tensor> k, v;
        int64_t taken = 0;
    };
    QuantizedModel& q_;
    int64_t rows_;
    std::map<std::string, Parts> parts_;
    std::vector<AttentionSite*> bare_;
};

struct Variant {
    OpenedModel opened;
    std::unique_ptr<QuantizedModel> q;
    PtqResult ptq;
    std::map<std::string, at::Tensor> inputs;                        // rows [n, in] as the input quantizer sees them
    std::map<std::string, std::pair<at::Tensor, at::Tensor>> kv;     // [n, Hkv, D]
};

constexpr int64_t kSampleRows = 512;

void run_variant(Variant& v, const std::string& model, at::Device device, const Recipe& recipe, const Dataset& calibration,
                 const std::string& phase, JobSink& sink, const CancellationToken& cancel) {
    sink.progress(0, 2, phase);
    v.opened = open_model(model);
    if (v.opened.quantization)
        throw UserError("what-if: " + v.opened.path + " is already quantized; open its full-precision source model");
    move_model(*v.opened.model, device);  // before the quantizers, which work where their weights are
    v.q = std::make_unique<QuantizedModel>(*v.opened.model, recipe);
    PtqOptions po;
    po.batch_size = recipe.calibration.batch_size;
    po.sample_rows = kSampleRows;
    NullJobSink quiet;
    v.ptq = run_ptq_pipeline(*v.q, calibration, po, quiet, cancel);
    sink.progress(1, 2, phase);
    // The FP tensors every quantizer sees (rotated where the rotation is online), quantizers off.
    std::set<std::string> layers;
    for (const auto& l : v.q->layers())
        if (l->weight_configured() || l->input_configured()) layers.insert(l->name());
    v.q->set_enabled(false);
    {
        InputStatisticsOptions so;
        so.sample_rows = kSampleRows;
        CalibrationObservers pass(*v.q, layers, so, calibration, false);
        KvCapture kv(*v.q, kSampleRows);
        run_calibration_forward(*v.opened.model, calibration, po.batch_size, phase, quiet, cancel);
        for (const std::string& name : layers) {
            const at::Tensor s = pass.at(name).samples();
            if (s.defined() && s.dim() == 2) v.inputs[name] = s;
        }
        for (const AttentionSite* site : v.opened.model->attention_sites()) v.kv[site->name] = kv.samples(site->name);
    }
    v.q->set_enabled(true);
    sink.progress(2, 2, phase);
}

double kurtosis(const at::Tensor& x) {
    const at::Tensor d = x.to(at::kDouble).reshape({-1});
    const at::Tensor c = d - d.mean();
    const double m2 = c.pow(2).mean().item<double>();
    return m2 > 0 ? c.pow(4).mean().item<double>() / (m2 * m2) : 0.0;
}

double max_over_rms(const at::Tensor& x) {
    const at::Tensor d = x.to(at::kDouble);
    const double rms = std::sqrt(d.pow(2).mean().item<double>());
    return rms > 0 ? d.abs().max().item<double>() / rms : 0.0;
}

double sqnr(const at::Tensor& x, const at::Tensor& q) {
    const double s = x.to(at::kDouble).pow(2).sum().item<double>();
    const double n = (x - q).to(at::kDouble).pow(2).sum().item<double>();
    return sqnr_db(s, n);
}

// Counts of x over [-r, r] in `bins` equal bins (values beyond go to under / overflow).
HistogramData histogram(const at::Tensor& x, double r, int bins) {
    HistogramData h;
    h.lo = -r;
    h.hi = r;
    h.counts.assign(static_cast<size_t>(bins), 0.0);
    const at::Tensor c = x.to(at::kFloat).contiguous().reshape({-1});
    const float* p = c.data_ptr<float>();
    const double w = (h.hi - h.lo) / bins;
    for (int64_t i = 0; i < c.numel(); ++i) {
        const double v = p[i];
        if (!std::isfinite(v)) continue;
        if (v < h.lo) {
            h.underflow += 1;
        } else if (v > h.hi) {
            h.overflow += 1;
        } else {
            const auto b = std::min<int64_t>(bins - 1, static_cast<int64_t>((v - h.lo) / w));
            h.counts[static_cast<size_t>(b)] += 1;
        }
    }
    return h;
}

// The robust half-range of a tensor: its 99.99th percentile of |x| doubled, at most its amax
// (TensorStatistics' histogram range).
double robust_range(const at::Tensor& x) {
    const at::Tensor c = x.to(at::kFloat).contiguous();
    const TensorStatistics s = tensor_statistics(c.data_ptr<float>(), 1, c.numel(), 0, 8);
    return s.histogram.hi > 0 ? s.histogram.hi : 1.0;
}

std::vector<double> grid_of(const at::Tensor& rows, const QuantSpec& spec) {
    if (!spec.info) return {};
    const at::Tensor c = rows.to(at::kFloat).contiguous();
    std::vector<float> q;
    try {
        return fit_weight(c.data_ptr<float>(), c.size(0), c.size(1), spec, 8, q).grid;
    } catch (const UserError&) {
        return {};
    }
}

// One tensor's before / after record; quantize_* give its fake quantization (or undefined).
// The tensors may be on a GPU (--device): the statistics below read them on the host, so they are
// compared as CPU copies (no copy for CPU tensors).
WhatIfTensor compare(const std::string& name, const std::string& kind, const at::Tensor& before_on_device,
                     const at::Tensor& after_on_device, const at::Tensor& q_before_on_device,
                     const at::Tensor& q_after_on_device, const QuantSpec* spec_before, const QuantSpec* spec_after,
                     const std::string& d_before, const std::string& d_after, int bins) {
    const at::Tensor before = before_on_device.cpu(), after = after_on_device.cpu();
    const at::Tensor q_before = q_before_on_device.defined() ? q_before_on_device.cpu() : at::Tensor();
    const at::Tensor q_after = q_after_on_device.defined() ? q_after_on_device.cpu() : at::Tensor();
    WhatIfTensor t;
    t.name = name;
    t.kind = kind;
    t.quantizer_before = d_before;
    t.quantizer_after = d_after;
    t.kurtosis_before = kurtosis(before);
    t.kurtosis_after = kurtosis(after);
    t.max_over_rms_before = max_over_rms(before);
    t.max_over_rms_after = max_over_rms(after);
    t.sqnr_before = q_before.defined() ? sqnr(before, q_before) : kNaN;
    t.sqnr_after = q_after.defined() ? sqnr(after, q_after) : kNaN;
    const double r = std::max(robust_range(before), robust_range(after));
    t.histogram_before = histogram(before, r, bins);
    t.histogram_after = histogram(after, r, bins);
    const int64_t cols_b = before.size(-1), cols_a = after.size(-1);
    if (spec_before) t.grid_before = grid_of(before.reshape({-1, cols_b}), *spec_before);
    if (spec_after) t.grid_after = grid_of(after.reshape({-1, cols_a}), *spec_after);
    return t;
}

void add_activations(WhatIfReport& report, Variant& b, Variant& a, int bins) {
    for (const auto& la : a.q->layers()) {
        const LayerQuantizer* lb = b.q->find(la->name());
        auto ib = b.inputs.find(la->name()), ia = a.inputs.find(la->name());
        if (!lb || ib == b.inputs.end() || ia == a.inputs.end()) continue;
        at::Tensor qb, qa;
        const QuantSpec *sb = nullptr, *sa = nullptr;
        QuantSpec spec_b, spec_a;
        if (lb->input_configured()) {
            spec_b = lb->input_spec_for_forward();
            qb = fake_quantize(ib->second, spec_b);
            sb = &spec_b;
        }
        if (la->input_configured()) {
            spec_a = la->input_spec_for_forward();
            qa = fake_quantize(ia->second, spec_a);
            sa = &spec_a;
        }
        report.tensors.push_back(compare(la->name(), "activation", ib->second, ia->second, qb, qa, sb, sa,
                                         describe(lb->plan().input, true), describe(la->plan().input, true), bins));
    }
}

void add_kv(WhatIfReport& report, Variant& b, Variant& a, int bins) {
    for (const AttentionSite* site : a.opened.model->attention_sites()) {
        const auto& [kb, vb] = b.kv[site->name];
        const auto& [ka, va] = a.kv[site->name];
        if (!kb.defined() || !ka.defined()) continue;
        const KvCacheQuantizer* qb = b.q->find_kv_cache(site->name);
        const KvCacheQuantizer* qa = a.q->find_kv_cache(site->name);
        auto quantized = [](const KvCacheQuantizer* q, const at::Tensor& x, bool key) {
            if (!q || !q->configured()) return at::Tensor();
            return key ? q->quantize_key(x) : q->quantize_value(x);
        };
        auto spec = [](const KvCacheQuantizer* q, bool key, QuantSpec& out) -> const QuantSpec* {
            if (!q || !q->configured()) return nullptr;
            out = q->spec();
            const std::vector<float>& amax = key ? q->key_amax() : q->value_amax();
            if (!amax.empty()) out.fixed_amax = *std::max_element(amax.begin(), amax.end());
            return &out;
        };
        auto described = [](const KvCacheQuantizer* q) { return q ? q->settings().describe() : std::string("off"); };
        for (const bool key : {true, false}) {
            QuantSpec sb, sa;
            const at::Tensor& xb = key ? kb : vb;
            const at::Tensor& xa = key ? ka : va;
            report.tensors.push_back(compare(site->name + (key ? ".k_cache" : ".v_cache"), key ? "key" : "value", xb, xa,
                                             quantized(qb, xb, key), quantized(qa, xa, key), spec(qb, key, sb),
                                             spec(qa, key, sa), described(qb), described(qa), bins));
        }
    }
}

// 1 - mean cosine of the sentence embeddings (the model's sentence-transformers pooling).
double embedding_distance(Model& fp, Model& quantized, const Dataset& data, const CancellationToken& cancel) {
    c10::InferenceMode inference;
    double sum = 0;
    int64_t n = 0;
    const int64_t batch = 16;
    for (int64_t i = 0; i < data.size(); i += batch) {
        cancel.throw_if_cancelled();
        const at::Tensor ids = on_model_device(fp, data.inputs.slice(0, i, std::min(data.size(), i + batch)));
        const at::Tensor mask = at::ones_like(ids);
        const at::Tensor e0 = sentence_embeddings(fp, ids, mask), e1 = sentence_embeddings(quantized, ids, mask);
        sum += at::cosine_similarity(e0.to(at::kDouble), e1.to(at::kDouble), 1).sum().item<double>();
        n += ids.size(0);
    }
    return n > 0 ? 1.0 - sum / static_cast<double>(n) : kNaN;
}

KvCacheMemorySummary memory_of(const KvCacheMemory& m) {
    KvCacheMemorySummary s;
    s.layers = m.layers;
    s.kv_heads = m.kv_heads;
    s.head_dim = m.head_dim;
    s.bytes_per_token = m.bytes_per_token();
    s.fp16_bytes_per_token = m.fp16_bits_per_token / 8.0;
    return s;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json histogram_json(const HistogramData& h) {
    return {{"lo", h.lo}, {"hi", h.hi}, {"counts", h.counts}, {"underflow", h.underflow}, {"overflow", h.overflow}};
}

nlohmann::json memory_json(const KvCacheMemorySummary& m) {
    return {{"bytes_per_token", m.bytes_per_token}, {"fp16_bytes_per_token", m.fp16_bytes_per_token},
            {"bytes_8k", m.bytes_8k()}, {"fp16_bytes_8k", m.fp16_bytes_8k()}};
}

}  // namespace

WhatIfReport run_what_if(const WhatIfRequest& req, JobSink& sink, const CancellationToken& cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    if (req.recipe.empty()) throw UserError("what-if: a recipe is required");
    if (req.calibration.empty()) throw UserError("what-if: calibration data is required");
    if (req.samples <= 0 || req.eval_samples <= 0) throw UserError("what-if: the sample counts must be positive");
    // A device this build or machine lacks is refused before anything is read.
    const at::Device device = torch_device(req.device);
    sink.progress(0, 1, "load");
    const Recipe base = load_recipe(req.recipe);
    Recipe before = base, after = base;
    before.kv_cache = KvCacheSettings{};
    before.rotation = RotationSettings{};
    overlay_recipe(after, req.kv_cache, req.rotate);
    Recipe quick_before = before, quick_after = after;  // RTN weights, max calibration: quick
    quick_before.algorithm = quick_after.algorithm = PtqAlgorithm{};

    OpenedModel fp = open_model(req.model);
    if (fp.quantization) throw UserError("what-if: " + fp.path + " is already quantized; open its full-precision source model");
    move_model(*fp.model, device);
    DataOptions co;
    co.split = DataSplit::Train;
    co.samples = req.samples;
    co.seed = req.seed;
    co.sequence_length = req.sequence_length > 0 ? req.sequence_length : base.calibration.sequence_length;
    const Dataset calibration = load_dataset(req.calibration, co, fp.data);
    DataOptions eo;
    eo.split = DataSplit::Validation;
    eo.samples = req.eval_samples;
    eo.seed = req.seed;
    eo.sequence_length = co.sequence_length;
    const Dataset eval_data = load_dataset(req.eval_data.empty() ? req.calibration : req.eval_data, eo, fp.data);
    sink.progress(1, 1, "load");
    cancel.throw_if_cancelled();

    Variant b, a;
    run_variant(b, req.model, device, quick_before, calibration, "before", sink, cancel);
    cancel.throw_if_cancelled();
    run_variant(a, req.model, device, quick_after, calibration, "after", sink, cancel);

    WhatIfReport report;
    report.model_path = fp.path;
    report.recipe_name = after.name;
    report.kv_cache_before = before.kv_cache.describe();
    report.kv_cache_after = after.kv_cache.describe();
    report.rotation_before = before.rotation.describe();
    report.rotation_after = after.rotation.describe();
    report.rotation_notes = a.ptq.rotation;
    report.has_kv_cache = !fp.model->attention_sites().empty();
    report.recipe_json_after = recipe_to_json(after);
    report.weight_bytes_before = b.ptq.size.bytes();
    report.weight_bytes_after = a.ptq.size.bytes();
    report.kv_memory_before = memory_of(b.ptq.kv_memory);
    report.kv_memory_after = memory_of(a.ptq.kv_memory);

    sink.progress(0, 3, "compare");
    {
        c10::InferenceMode inference;
        add_activations(report, b, a, req.bins);
        add_kv(report, b, a, req.bins);
    }
    std::map<std::string, double> sqnr_before;
    for (const LayerPtqReport& l : b.ptq.layers) sqnr_before[l.layer] = l.output_sqnr_db;
    for (const LayerPtqReport& l : a.ptq.layers)
        if (sqnr_before.count(l.layer)) report.layers.push_back({l.layer, sqnr_before[l.layer], l.output_sqnr_db});
    sink.progress(1, 3, "compare");

    report.eval_examples = eval_data.size();
    NullJobSink quiet;
    if (fp.model->config().architecture == "bert") {
        report.output_metric = "1-cosine";
        report.output_before = embedding_distance(*fp.model, *b.opened.model, eval_data, cancel);
        sink.progress(2, 3, "compare");
        report.output_after = embedding_distance(*fp.model, *a.opened.model, eval_data, cancel);
    } else {
        report.output_metric = "kl";
        const EvalReport rb = evaluate(*b.opened.model, fp.model.get(), eval_data, EvalOptions{}, quiet, cancel);
        sink.progress(2, 3, "compare");
        const EvalReport ra = evaluate(*a.opened.model, fp.model.get(), eval_data, EvalOptions{}, quiet, cancel);
        report.output_before = rb.overall.kl.value_or(kNaN);
        report.output_after = ra.overall.kl.value_or(kNaN);
    }
    sink.progress(3, 3, "compare");
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

std::string what_if_report_json(const WhatIfReport& r) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const WhatIfTensor& t : r.tensors)
        tensors.push_back({{"name", t.name},
                           {"kind", t.kind},
                           {"quantizer_before", t.quantizer_before},
                           {"quantizer_after", t.quantizer_after},
                           {"kurtosis_before", t.kurtosis_before},
                           {"kurtosis_after", t.kurtosis_after},
                           {"max_over_rms_before", t.max_over_rms_before},
                           {"max_over_rms_after", t.max_over_rms_after},
                           {"sqnr_db_before", number_or_null(t.sqnr_before)},
                           {"sqnr_db_after", number_or_null(t.sqnr_after)},
                           {"histogram_before", histogram_json(t.histogram_before)},
                           {"histogram_after", histogram_json(t.histogram_after)},
                           {"grid_before", t.grid_before},
                           {"grid_after", t.grid_after}});
    nlohmann::json layers = nlohmann::json::array();
    for (const WhatIfLayer& l : r.layers)
        layers.push_back({{"layer", l.layer}, {"output_sqnr_db_before", number_or_null(l.sqnr_before)},
                          {"output_sqnr_db_after", number_or_null(l.sqnr_after)}});
    const nlohmann::json j = {{"model", r.model_path},
                              {"recipe", r.recipe_name},
                              {"kv_cache", {{"before", r.kv_cache_before}, {"after", r.kv_cache_after}}},
                              {"rotation", {{"before", r.rotation_before}, {"after", r.rotation_after}, {"notes", r.rotation_notes}}},
                              {"has_kv_cache", r.has_kv_cache},
                              {"output_metric", r.output_metric},
                              {"output_before", number_or_null(r.output_before)},
                              {"output_after", number_or_null(r.output_after)},
                              {"eval_examples", r.eval_examples},
                              {"weight_bytes_before", r.weight_bytes_before},
                              {"weight_bytes_after", r.weight_bytes_after},
                              {"kv_memory_before", memory_json(r.kv_memory_before)},
                              {"kv_memory_after", memory_json(r.kv_memory_after)},
                              {"layers", layers},
                              {"tensors", tensors},
                              {"recipe_after", nlohmann::json::parse(r.recipe_json_after)},
                              {"seconds", r.seconds}};
    return j.dump(2) + "\n";
}

}  // namespace ql
