// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/sensitivity_api.h"

#include <chrono>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/ptq/sensitivity.h"
#include "engine/quant/recipe.h"

namespace ql {
namespace {

struct Measured {
    SensitivityResult result;
    double bits_per_weight = 0;
};

Measured measure(const std::string& model, at::Device device, const Recipe& recipe, const Dataset& calibration,
                 const Dataset& eval, JobSink& sink, const CancellationToken& cancel) {
    OpenedModel opened = open_model(model);
    move_model(*opened.model, device);  // before the quantizers, which work where their weights are
    QuantizedModel q(*opened.model, recipe);
    PtqOptions o;
    o.batch_size = recipe.calibration.batch_size;
    run_ptq_pipeline(q, calibration, o, sink, cancel);
    Measured m;
    m.result = measure_sensitivity(q, eval, o.batch_size, sink, cancel);
    const ModelSize s = q.size();
    m.bits_per_weight = s.quantized_parameters ? s.quantized_bits / static_cast<double>(s.quantized_parameters) : 16.0;
    return m;
}

}  // namespace

SensitivityReport run_sensitivity(const SensitivityRequest& req, JobSink& sink, const CancellationToken& cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    if (req.recipes.empty()) throw UserError("sensitivity: at least one recipe is required");
    if (req.calibration.empty()) throw UserError("sensitivity: calibration data is required (--calib)");
    if (req.bits_budget < 0) throw UserError("sensitivity: the bits budget must be positive");
    if (req.bits_per_parameter_budget < 0) throw UserError("sensitivity: the bits per parameter budget must be positive");
    const at::Device device = torch_device(req.device);
    std::vector<Recipe> recipes;
    for (const std::string& r : req.recipes) recipes.push_back(load_recipe(r));
    OpenedModel opened = open_model(req.model);
    if (opened.quantization) throw UserError("sensitivity: " + opened.path + " is already quantized; use its source model");
    for (const Recipe& r : recipes) QuantizedModel validate(*opened.model, r);  // every recipe fits, before any work
    DataOptions co;
    co.split = DataSplit::Train;
    co.samples = req.samples > 0 ? req.samples : recipes.front().calibration.samples;
    co.seed = req.seed;
    const Dataset calibration = load_dataset(req.calibration, co, opened.data);
    DataOptions eo;
    eo.samples = req.eval_samples;
    eo.seed = req.seed;
    if (req.measure_on_training_split) eo.split = DataSplit::Train;
    else if (req.data.empty()) eo.split = DataSplit::Validation;
    const Dataset eval =
        load_dataset(req.data.empty() || req.measure_on_training_split ? req.calibration : req.data, eo, opened.data);

    SensitivityReport report;
    std::vector<Measured> measured;
    std::vector<MixedPrecisionCandidate> candidates;
    for (const Recipe& r : recipes) {
        measured.push_back(measure(req.model, device, r, calibration, eval, sink, cancel));
        report.recipes.push_back(r.name);
        report.all_quantized_loss.push_back(measured.back().result.all_quantized_loss);
        report.all_quantized_kl.push_back(measured.back().result.all_quantized_kl);
        report.all_quantized_cosine_loss.push_back(measured.back().result.all_quantized_cosine_loss);
        if (measured.back().result.encoder) report.metric = "cosine_loss";
        report.bits_per_weight.push_back(measured.back().bits_per_weight);
        report.fp_loss = measured.back().result.fp_loss;
    }
    for (size_t k = 0; k < recipes.size(); ++k) candidates.push_back({recipes[k].name, &recipes[k], measured[k].result.layers});
    // Rows: the layers of the first recipe; others add their values where they cover the layer.
    for (const LayerSensitivity& l : measured.front().result.layers) {
        SensitivityRow row;
        row.layer = l.layer;
        row.parameters = l.parameters;
        for (const Measured& m : measured) {
            double kl = -1, loss = 0, cosine = -1, bits = 16.0 * static_cast<double>(l.parameters);
            for (const LayerSensitivity& o : m.result.layers)
                if (o.layer == l.layer) {
                    kl = o.kl;
                    loss = o.loss_delta;
                    cosine = o.cosine_loss;
                    bits = o.weight_bits;
                }
            row.kl.push_back(kl);
            row.cosine_loss.push_back(cosine);
            row.loss_delta.push_back(loss);
            row.weight_bits.push_back(bits);
        }
        report.layers.push_back(row);
    }
    double budget = req.bits_budget;
    if (req.bits_per_parameter_budget > 0) {
        // B · N = bits of the candidate layers + 16 · (N − their parameters).
        int64_t candidate = 0;
        for (const SensitivityRow& row : report.layers) candidate += row.parameters;
        const auto total = static_cast<double>(opened.model->parameter_count());
        if (candidate <= 0) throw UserError("sensitivity: " + opened.path + " has no layer the candidate recipes quantize");
        budget = (req.bits_per_parameter_budget * total - 16.0 * (total - static_cast<double>(candidate))) /
                 static_cast<double>(candidate);
        if (budget <= 0)
            throw UserError("sensitivity: a budget of " + std::to_string(req.bits_per_parameter_budget) + " bits per parameter is below what " +
                            opened.path + "'s unquantized parameters (embeddings, norms) take at 16 bits");
    }
    if (budget > 0) {
        report.mixed_bits_budget = budget;
        const MixedPrecisionChoice choice = choose_mixed_precision(candidates, budget);
        for (size_t i = 0; i < report.layers.size() && i < choice.chosen.size(); ++i) report.layers[i].chosen = choice.chosen[i].second;
        report.mixed_recipe_json = recipe_to_json(choice.recipe);
        report.mixed_bits_per_weight = choice.bits_per_weight;
        report.mixed_predicted_kl = choice.predicted_kl;
        const Recipe mixed = parse_recipe(report.mixed_recipe_json, "mixed precision search");
        OpenedModel m = open_model(req.model);
        move_model(*m.model, device);
        QuantizedModel q(*m.model, mixed);
        PtqOptions o;
        o.batch_size = mixed.calibration.batch_size;
        run_ptq_pipeline(q, calibration, o, sink, cancel);
        const SensitivityResult r = measure_sensitivity(q, eval, o.batch_size, sink, cancel);
        report.mixed_loss = r.all_quantized_loss;
        report.mixed_kl = r.all_quantized_kl;
        report.mixed_cosine_loss = r.all_quantized_cosine_loss;
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace ql
