// SPDX-License-Identifier: GPL-3.0-or-later
// run_layer_stats: open the model (and its recipe), load the calibration data, and measure every
// layer (engine/stats/layer_statistics.h).
#include "engine/api/layer_stats_api.h"

#include <chrono>
#include <memory>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"
#include "engine/data/dataset.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"
#include "engine/quant/rotation.h"
#include "engine/stats/layer_statistics.h"

namespace ql {

LayerStatsReport run_layer_stats(const LayerStatsRequest& req, JobSink& sink, const CancellationToken& cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    if (req.top_k < 0) throw UserError("stats: top_k must not be negative");
    if (req.bins < 1) throw UserError("stats: bins must be at least 1");
    if (req.samples < 0) throw UserError("stats: samples must not be negative");
    const at::Device device = torch_device(req.device);
    LayerStatsReport report;
    report.formats = req.formats.empty() ? default_stats_formats() : req.formats;
    for (const std::string& f : report.formats) format_info(f);  // UserError naming an unknown one

    sink.progress(0, 1, "load");
    OpenedModel opened = open_model(req.model);
    // Only a calibration pass runs on the device (measure_layer_statistics): without data the
    // model stays on the CPU, where the statistics are computed.
    if (!req.calibration.empty()) move_opened_model(opened, device);
    report.model_path = opened.path;
    if (opened.quantization && !req.recipe.empty())
        throw UserError("stats: " + opened.path + " is a quantized checkpoint with its own recipe; drop --recipe");
    if (opened.quantization && (!req.kv_cache.empty() || !req.rotate.empty()))
        throw UserError("stats: " + opened.path + " is a quantized checkpoint; --kv-cache and --rotate apply to a full-precision model");
    std::unique_ptr<QuantizedModel> own;
    QuantizedModel* q = opened.quantization.get();
    if (!q) {
        Recipe recipe = req.recipe.empty() ? Recipe{} : load_recipe(req.recipe);
        if (req.recipe.empty()) recipe.source = "no recipe";
        overlay_recipe(recipe, req.kv_cache, req.rotate);
        own = std::make_unique<QuantizedModel>(*opened.model, recipe);
        q = own.get();
        if (recipe.rotation.enabled()) {
            // The statistics of the rotated model: what PTQ with this recipe quantizes.
            const RotationReport r = rotate_model(*q);
            for (const std::string& line : r.applied) sink.log(LogLevel::Info, "rotation: " + line);
            q->mark_rotated(r.applied);
        }
    }
    sink.progress(1, 1, "load");

    LayerStatsOptions options;
    options.formats = report.formats;
    options.layers = req.layers;
    options.top_k = req.top_k;
    options.bins = req.bins;
    options.sample_rows = req.sample_rows;
    options.checkpoint = opened.quantization != nullptr;
    options.gguf = opened.gguf.get();
    OpenedModel reference;
    if (!req.reference.empty()) {
        reference = open_model(req.reference);
        const ModelConfig &a = opened.model->config(), &b = reference.model->config();
        if (a.architecture != b.architecture || a.num_layers != b.num_layers || a.hidden_size != b.hidden_size)
            throw UserError("stats: the reference " + reference.path + " (" + b.architecture + ", " + std::to_string(b.num_layers) +
                            " layers, hidden " + std::to_string(b.hidden_size) + ") does not match " + opened.path);
        options.reference = reference.model.get();
    }
    options.kv_per_head = req.kv_per_head;
    if (!req.calibration.empty()) {
        DataOptions o;
        o.split = DataSplit::Train;
        o.samples = req.samples > 0 ? req.samples : 32;
        o.seed = req.seed;
        o.sequence_length = req.sequence_length;
        const Dataset data = load_dataset(req.calibration, o, opened.data);
        report.layers = measure_layer_statistics(*q, &data, options, sink, cancel);
    } else {
        report.layers = measure_layer_statistics(*q, nullptr, options, sink, cancel);
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace ql
