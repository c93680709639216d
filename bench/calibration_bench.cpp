// SPDX-License-Identifier: GPL-3.0-or-later
// Calibration overhead: the forward pass PTQ's calibration runs (every quantizer off, an input
// observer per layer collecting amax and a spread sample of 2048 input rows, plus a 2048-bin
// histogram with a histogram calibrator) against the plain forward, both timed alternately in
// the same iterations:  x_plain = calibration forward time / plain forward time (target <= 1.5).
//   CalibrationForward/<model>/<recipe>   demo decoder (batch 16 x 64 tokens) and a
//                                         GPT-2-small-shaped model (batch 4 x 256), random weights
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <set>

#include "engine/core/engine_runtime.h"
#include "engine/calib/calibration_observers.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace {

using Clock = std::chrono::steady_clock;

void BM_CalibrationForward(benchmark::State& state, const std::string& which, const std::string& recipe_name) {
    ql::initialise_engine_runtime();
    const bool demo = which == "demo";
    auto model = ql::create_model(demo ? ql::demo_decoder_config() : ql::gpt2_small_config(), 1);
    const int64_t batch = demo ? 16 : 4, seq = demo ? 64 : 256;
    ql::Recipe recipe = ql::load_recipe(recipe_name == "NVFP4_DEFAULT+percentile" ? "NVFP4_DEFAULT" : recipe_name);
    if (recipe_name == "NVFP4_DEFAULT+percentile") {
        recipe.quant_cfg.push_back(ql::RecipeEntry{"*input_quantizer", {}});
        recipe.quant_cfg.back().patch.calibrator = "percentile";
    }
    ql::QuantizedModel q(*model, recipe);
    ql::Dataset data;
    data.inputs = at::randint(0, model->config().vocab_size, {batch * 8, seq}, at::kLong);
    std::set<std::string> layers;
    for (const auto& l : q.layers())
        if (l->weight_configured() || l->input_configured()) layers.insert(l->name());
    const at::Tensor ids = data.inputs.slice(0, 0, batch);
    c10::InferenceMode inference;
    double plain = 0, calib = 0;
    for (auto _ : state) {
        auto t0 = Clock::now();
        benchmark::DoNotOptimize(model->forward(ids).data_ptr());
        plain += std::chrono::duration<double>(Clock::now() - t0).count();
        {
            ql::InputStatisticsOptions o;
            o.sample_rows = 2048;
            o.channel_amax = recipe.algorithm.method == "smoothquant";
            ql::CalibrationObservers observers(q, layers, o, data, /*histograms=*/true);
            t0 = Clock::now();
            benchmark::DoNotOptimize(model->forward(ids).data_ptr());
            calib += std::chrono::duration<double>(Clock::now() - t0).count();
        }
    }
    state.counters["plain_ms"] = 1e3 * plain / double(state.iterations());
    state.counters["calibration_ms"] = 1e3 * calib / double(state.iterations());
    state.counters["x_plain"] = calib / plain;
}

const int kRegistered = [] {
    for (const std::string which : {"demo", "gpt2_small"})
        for (const std::string recipe : {"NVFP4_DEFAULT", "INT8_SMOOTHQUANT", "NVFP4_DEFAULT+percentile"})
            benchmark::RegisterBenchmark(("CalibrationForward/" + which + "/" + recipe).c_str(), BM_CalibrationForward, which,
                                         recipe)
                ->Unit(benchmark::kMillisecond)
                ->Iterations(which == "demo" ? 30 : 4)
                ->UseRealTime();
    return 0;
}();

}  // namespace
