// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/ptq_estimate.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

#include "engine/core/process_memory.h"
#include "engine/ptq/input_groups.h"
#include "engine/ptq/ptq_cost.h"
#include "engine/quant/quant_plan.h"

namespace ql {
namespace {

double shape_elements(const std::vector<int64_t>& s) {
    double n = 1;
    for (int64_t d : s) n *= static_cast<double>(d);
    return n;
}

std::string dims(std::initializer_list<int64_t> d) {
    std::string out;
    for (int64_t v : d) out += (out.empty() ? "" : " x ") + std::to_string(v);
    return out;
}

// What one part of the model holds while PTQ works on it.
struct PartMemory {
    double weights = 0;       // its parameters as stored (mapped pages once read)
    double float_copies = 0;  // FP weights for the report + quantized weights, float32
    double samples = 0;       // sampled inputs of its layers
    double hessians = 0;      // GPTQ: every distinct Hessian, alive during the pass
    double solve = 0;         // GPTQ / AWQ / writer transients of its largest layer
};

}  // namespace

double measured_gemm_gflops() {
    static std::once_flag once;
    static double rate = 0;
    std::call_once(once, [] {
        c10::InferenceMode inference;
        const int64_t m = 512, k = 2048, n = 2048;
        const at::Tensor a = at::randn({m, k}), b = at::randn({k, n});
        at::mm(a, b);  // warm-up: thread pool, first-touch pages
        double best = 0;
        for (int i = 0; i < 3; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            at::mm(a, b);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (s > 0) best = std::max(best, 2.0 * m * k * n / s / 1e9);
        }
        rate = best;
    });
    return rate;
}

JobEstimate estimate_ptq(const QuantizedModel& q, int64_t samples, int64_t tokens, const PtqOptions& options) {
    const Model& model = q.model();
    const ModelConfig& c = model.config();
    const PtqAlgorithm& alg = q.recipe().algorithm;
    const bool gptq = alg.method == "gptq", smooth = alg.method == "smoothquant", awq = alg.method == "awq";
    const bool by_blocks = options.layer_by_layer && model.block_count() > 0;
    const double bs = static_cast<double>(std::min<int64_t>(std::max<int64_t>(1, options.batch_size), samples));
    const double t = static_cast<double>(tokens), n = static_cast<double>(samples);
    const double rows = std::min<double>(static_cast<double>(options.sample_rows), n * t);

    std::map<std::string, double> stored;  // parameter -> bytes as held
    for (const auto& [name, tensor] : model.named_parameters()) stored[name] = static_cast<double>(tensor.nbytes());
    auto bytes_of = [&](const std::vector<std::string>& names) {
        double b = 0;
        for (const std::string& p : names) b += stored.count(p) ? stored.at(p) : 0;
        return b;
    };
    auto part_memory = [&](const std::vector<std::string>& params, const std::vector<std::string>& layers) {
        PartMemory m;
        m.weights = bytes_of(params);
        double largest = 0, largest_in = 0;
        std::vector<std::string> gptq_layers;
        for (const std::string& name : layers) {
            const LayerQuantizer* l = q.find(name);
            if (!l || !(l->weight_configured() || l->input_configured())) continue;
            const std::vector<int64_t> s = weight_matrix_shape(l->layer());
            const double elements = shape_elements(s);
            m.float_copies += 4 * elements * (l->weight_configured() ? 2 : 1);
            m.samples += 4 * rows * static_cast<double>(s[1]);
            largest = std::max(largest, elements);
            largest_in = std::max(largest_in, static_cast<double>(s[1]));
            if (gptq && l->weight_configured()) gptq_layers.push_back(name);
        }
        for (const InputGroup& g : input_groups(model, gptq_layers)) {
            const double in = static_cast<double>(input_features(q.find(g.layers.front())->layer()));
            m.hessians += 4 * in * in * static_cast<double>(g.layers.size());
        }
        // The solve's copies of H (its float32 copy and at most three factors alive at once,
        // engine/ptq/gptq.cpp; the finiteness check's bytes) and of W (the copy, its transpose,
        // the result and its transpose back); AWQ's scaled candidates; the writer's snapping
        // check (3 float32 copies and the BF16 one) of the largest weight.
        m.solve = std::max({gptq ? (4 * 4 + 1) * largest_in * largest_in + 4 * 4 * largest : 0.0, awq ? 3 * 4 * largest : 0.0,
                            14 * largest});
        return m;
    };
    // One batch's forward through a block: the float32 input, q / k / v / attention outputs, the
    // MLP's three intermediates, the T x T scores (scores, mask, softmax) and the repeated K / V.
    const double h = static_cast<double>(c.hidden_size), qd = static_cast<double>(c.num_heads * c.head_dim);
    const double kvd = static_cast<double>(c.num_kv_heads * c.head_dim), inter = static_cast<double>(c.intermediate_size);
    const double block_forward =
        4 * bs * t * (6 * h + 2 * qd + 2 * kvd + 2 * qd + 3 * inter) + 4 * bs * static_cast<double>(c.num_heads) * t * t * 3;
    const double head_forward = 4 * bs * t * (h + 2 * static_cast<double>(c.vocab_size));

    JobEstimate e;
    e.job = "ptq";
    e.current_bytes = static_cast<double>(process_memory().rss_bytes);
    e.available_bytes = static_cast<double>(available_memory_bytes());
    std::vector<JobEstimate::Part> peak;
    double peak_total = 0;
    auto consider = [&](std::vector<JobEstimate::Part> parts) {
        double total = 0;
        for (const auto& p : parts) total += p.bytes;
        if (total > peak_total) {
            peak_total = total;
            peak = std::move(parts);
        }
    };
    const std::string dtype = ptq_stream_dtype(model) == at::kBFloat16 ? "bf16" : "float32";
    if (by_blocks) {
        const double act_bytes = ptq_stream_dtype(model) == at::kBFloat16 ? 2 : 4;
        const double stream = n * t * h * act_bytes;
        const std::string stream_what = "activations between blocks (" + dims({samples, tokens, c.hidden_size}) + ", " + dtype + ")";
        const std::vector<std::string> outside_params = model.unblocked_parameter_names();
        std::vector<std::string> outside_layers;
        std::set<std::string> in_blocks;
        for (int64_t b = 0; b < model.block_count(); ++b)
            for (const std::string& l : model.block_layer_names(b)) in_blocks.insert(l);
        for (const auto& l : q.layers())
            if (!in_blocks.count(l->name())) outside_layers.push_back(l->name());
        // Embedding: the table's pages (the outside parameters) and the activations.
        consider({{stream_what, stream}, {"embeddings and the other weights outside blocks, as stored", bytes_of(outside_params)},
                  {"one batch's embedding", 4 * bs * t * h * 2}});
        double finished_weights = 0, finished_copies = 0;  // kept when parts are not released
        for (int64_t b = 0; b < model.block_count(); ++b) {
            const PartMemory m = part_memory(model.block_parameter_names(b), model.block_layer_names(b));
            consider({{stream_what, stream},
                      {"one block's weights, as stored", m.weights},
                      {"one block's float32 FP and quantized weights", m.float_copies},
                      {"sampled layer inputs (" + std::to_string(options.sample_rows) + " rows a layer)", m.samples},
                      {"GPTQ Hessians of one block", m.hessians},
                      {"the largest layer's GPTQ / AWQ / writer working copies", m.solve},
                      {"one batch's forward through a block (batch " + std::to_string(static_cast<int64_t>(bs)) + ")", block_forward},
                      {"earlier blocks' weights and quantized weights (kept: parts not released)", finished_weights + finished_copies}});
            if (!options.release_parts) {
                finished_weights += m.weights;
                finished_copies += m.float_copies / 2;  // the quantized weights stay, the FP copies go
            }
        }
        const PartMemory head = part_memory(outside_params, outside_layers);
        consider({{stream_what, stream},
                  {"embeddings and the other weights outside blocks, as stored", head.weights},
                  {"lm_head's float32 copies and samples", head.float_copies + head.samples + head.hessians + head.solve},
                  {"one batch's logits", head.float_copies > 0 ? head_forward : 0.0},
                  {"earlier blocks' weights and quantized weights (kept: parts not released)", finished_weights + finished_copies}});
        e.work_flops = ptq_work_plan(q, tokens, samples, options.sample_rows).total();
    } else {
        std::vector<std::string> all_params, all_layers;
        for (const auto& [name, bytes] : stored) all_params.push_back(name);
        for (const auto& l : q.layers()) all_layers.push_back(l->name());
        const PartMemory m = part_memory(all_params, all_layers);
        double largest_block_hessians = m.hessians;
        if (model.block_count() > 0) {
            largest_block_hessians = 0;
            for (int64_t b = 0; b < model.block_count(); ++b)
                largest_block_hessians = std::max(largest_block_hessians, part_memory({}, model.block_layer_names(b)).hessians);
        }
        consider({{"the model's weights, as held", m.weights},
                  {"float32 FP and quantized weights of every quantized layer", m.float_copies},
                  {"sampled layer inputs (" + std::to_string(options.sample_rows) + " rows a layer)", m.samples},
                  {"GPTQ Hessians of one block", largest_block_hessians},
                  {"the largest layer's GPTQ / AWQ / writer working copies", m.solve},
                  {"one batch's forward (batch " + std::to_string(static_cast<int64_t>(bs)) + ")", block_forward + head_forward}});
        // Whole-model passes: statistics, recalibration, one per GPTQ block.
        const PtqWorkPlan plan = ptq_work_plan(q, tokens, samples, options.sample_rows);
        double forward = 0, rest = 0;
        for (const PtqBlockWork& w : plan.parts) {
            forward += w.pass_per_sample * n;
            rest += w.algorithms + w.measure;
        }
        const double passes = 1 + ((smooth || awq) ? 1 : 0) + (gptq ? static_cast<double>(std::max<int64_t>(1, model.block_count())) : 0);
        e.work_flops = forward * passes + rest;
    }
    std::sort(peak.begin(), peak.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    while (!peak.empty() && peak.back().bytes <= 0) peak.pop_back();
    e.parts = peak;
    e.peak_bytes = e.current_bytes + peak_total;
    e.gflops = measured_gemm_gflops();
    e.seconds = e.gflops > 0 ? e.work_flops / (e.gflops * 1e9) : 0;
    if (!e.parts.empty()) {
        const std::string& top = e.parts.front().what;
        if (top.rfind("activations between blocks", 0) == 0)
            e.advice = "fewer calibration samples (--samples) or shorter sequences (--seq-len) shrink the activations between blocks";
        else if (top.rfind("one batch's", 0) == 0)
            e.advice = "a smaller --batch-size or shorter sequences (--seq-len) shrink one batch's forward";
        else if (top.find("earlier blocks") != std::string::npos || top.rfind("the model's weights", 0) == 0 ||
                 top.rfind("float32 FP and quantized weights of every", 0) == 0)
            e.advice = "write the checkpoint block by block (ptq --out on a model above 1 GB), which gives each finished block's memory back";
        else if (top.rfind("sampled layer inputs", 0) == 0)
            e.advice = "fewer calibration samples (--samples) keep fewer sampled rows";
        else if (top.find("GPTQ") != std::string::npos)
            e.advice = "GPTQ's Hessians grow with the square of a layer's input width; RTN (algorithm max) needs none";
    }
    return e;
}

}  // namespace ql
