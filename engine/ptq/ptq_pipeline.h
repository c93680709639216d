// SPDX-License-Identifier: GPL-3.0-or-later
// Post-training quantization of a model whose quantizers are installed (QuantizedModel), as the
// recipe's algorithm says (docs/RECIPES.md "Algorithms"):
//   0. rotate: the recipe's rotation (engine/quant/rotation.h), once, before anything is measured;
//   1. calibrate on the FP model (KV caches too: max amax of K after RoPE and of V): input amax, per-channel amax (SmoothQuant), input samples;
//   2. smoothquant: s per group of layers reading one input, 1/s folded into the preceding norm
//      where the model allows (else kept as pre_quant_scale), W *= s;
//      awq: per layer, a pre_quant_scale search (and optional clipping) on the layer's inputs;
//   3. static input scales from the calibrator (max, percentile, MSE, entropy), recalibrated
//      after step 2 changed the inputs; weights whose calibrator is "mse" or "imatrix_mse" get
//      the per-cell clipping search (engine/ptq/weight_clipping.h) and are pinned to its result;
//   4. gptq: block by block in forward order, each block's Hessians collected with the earlier
//      blocks already quantized, weights pinned to GPTQ's result;
//   5. every configured quantizer on; per-layer error against the FP layer on FP inputs.
//
// Layer by layer (decoders on token data, PtqOptions::layer_by_layer; docs/RECIPES.md "Layer by
// layer"), as llm-compressor's sequential pipeline: the calibration tokens are embedded once and
// their activations [samples, tokens, hidden] pass one transformer block at a time
// (Model::run_block). For block i, steps 1-5 run on block i's layers with the activations that
// enter it, then the activations for block i + 1 are computed (in place) and block i is final:
// PtqOptions::on_part_done may write it and release_parts gives its memory back. Then the layers
// outside blocks (lm_head) see the last block's output. What each step sees:
//   - RTN / calibration-only recipes: the activations of the FP model, exactly as the whole
//     model's forward gives them (same operations and batches: the same result bit for bit);
//   - SmoothQuant / AWQ: the activations of the FP model with the earlier blocks smoothed (the
//     same function; rounding may differ from the whole-model pass in the last bits);
//   - GPTQ: the activations of the model with the earlier blocks quantized, for the Hessians (as
//     the whole-model pipeline) and also for the statistics of step 1 (static input amax, the
//     samples of the error report), which the whole-model pipeline takes from the FP model.
// One pass over the data per block (statistics and the next block's input together) for
// RTN / calibration recipes; two for SmoothQuant, AWQ and GPTQ (its Hessians are collected in the
// first pass when the block has no input quantizer).
//
// A Job (engine/jobs/job.h): whole model: progress per phase ("rotate", "calibrate",
// "smoothquant", "awq", "gptq", "measure"); layer by layer: one phase "ptq" counted in units of
// work (every sample through every block, every layer's algorithm) with a log line per block.
// Per-layer metrics through JobSink::layer_metric; cancellable between batches, within a
// forward (at every residual-stream stage) and between layers (the model is then partly
// modified: discard it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/core/importance_matrix.h"
#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/quant/quantized_model.h"

namespace ql {

// One layer's outcome. Errors compare the layer's output with the FP layer's on the same FP
// calibration inputs (the sampled rows): sqnr_db = 10 log10(sum y^2 / sum (y - y_q)^2).
struct LayerPtqReport {
    std::string layer;
    std::string kind;                 // linear | conv2d
    std::string weight_quantizer;     // describe(): "int4 group 128", "off"
    std::string input_quantizer;
    std::string method;               // rtn | smoothquant | awq | gptq | - (not quantized)
    int64_t parameters = 0;
    double weight_bits = 0;           // storage bits of the weight, scales included
    double weight_mse = 0;            // mean (W - Q(W))^2 of the weight the quantizer sees
    double output_mse = 0;            // mean (y - y_q)^2
    double output_sqnr_db = 0;
    double rtn_output_sqnr_db = 0;    // the same layer with plain RTN weights (and unsmoothed inputs)
    double input_amax = 0;            // calibrated static amax (0 = dynamic / none)
    double input_clipped_fraction = 0;  // sampled inputs beyond the static amax
    double awq_alpha = -1;            // AWQ's chosen grid point
    double gptq_proxy_loss = -1;      // GPTQ's sum (w - q)^2 / d^2
    double seconds = 0;               // time the algorithm spent on this layer
};

// One attention's KV cache: the calibrated amax and the scales a KV-cache layout stores
// (KvCacheQuantizer::key_scale), and the error of the cached keys / values on the sampled
// calibration tokens: sqnr_db = 10 log10(sum k^2 / sum (k - Q(k))^2).
struct KvCachePtqReport {
    std::string attention;            // "model.layers.0.self_attn"
    std::string quantizer;            // KvCacheSettings::describe(), or "off" (rotation only)
    std::vector<float> key_amax, value_amax;    // 1 (tensor) or num_kv_heads values; empty: dynamic
    std::vector<float> key_scale, value_scale;
    double key_sqnr_db = 0, value_sqnr_db = 0;  // NaN when not quantized
    int64_t tokens = 0;               // calibration tokens seen
};

// A part of the model that is final: a transformer block (layer by layer), the layers outside
// blocks (after the last block), or the whole model (one part).
struct PtqPart {
    int64_t index = 0, count = 1;          // parts in forward order
    std::string name;                      // "model.layers.3", "outside blocks", "model"
    std::vector<std::string> parameters;   // HF names of the parameters the part holds
    std::vector<LayerQuantizer*> layers;   // its quantizers (configured or not)
    std::vector<KvCacheQuantizer*> kv_caches;
    std::vector<LayerPtqReport> reports;   // its layers' reports
    std::vector<KvCachePtqReport> kv_reports;
    // Layer by layer: the activations entering the next part (what a resumed run starts from);
    // null after the last part and for the whole model.
    const at::Tensor* next_activations = nullptr;
};

// Where a layer-by-layer run starts again after an earlier run of the same job was killed:
// parts [0, parts_done) are final (written by that run), `activations` [samples, tokens,
// hidden] enter part parts_done, and their reports come back into the result.
struct PtqResume {
    int64_t parts_done = 0;
    at::Tensor activations;
    std::vector<LayerPtqReport> layers;
    std::vector<KvCachePtqReport> kv_cache;
};

struct PtqOptions {
    int64_t batch_size = 16;     // calibration examples per forward
    int64_t sample_rows = 2048;  // input rows per layer kept for AWQ and the error report
    // The importance matrix for weight calibrator "imatrix_mse" (engine/ptq/weight_clipping.h);
    // entries by GGUF tensor name (llama / qwen2 / gpt2) or "<layer>.weight". Not owned.
    const ImportanceMatrix* imatrix = nullptr;
    // Block by block where the model runs that way (Model::block_count() > 0) and the data are
    // token windows; false: whole-model passes (what smaller models and tests of the
    // equivalence use).
    bool layer_by_layer = true;
    // Called once per part in forward order when it is final (quantizers set, weights pinned,
    // reports made); the streaming checkpoint writer. Its exceptions end the run.
    std::function<void(const PtqPart&)> on_part_done;
    // After on_part_done: drop each finished part's quantized-weight caches and give back its
    // mapped weights' pages (LayerQuantizer::release_weight, Model::release_parameter_pages), so
    // that memory holds one block at a time. The QuantizedModel is then spent: only what
    // on_part_done wrote remains (PtqResult still has every report and the size).
    bool release_parts = false;
    // Layer by layer only: start after the parts an earlier run finished.
    PtqResume resume;
};

struct PtqResult {
    std::vector<LayerPtqReport> layers;
    std::vector<KvCachePtqReport> kv_cache;
    std::vector<std::string> rotation;  // what the rotation step did and skipped
    ModelSize size;
    KvCacheMemory kv_memory;
    double seconds = 0;
    bool layer_by_layer = false;        // ran block by block
    int64_t parts = 1;                  // parts reported to on_part_done
};

PtqResult run_ptq_pipeline(QuantizedModel& quantized, const Dataset& calibration, const PtqOptions& options,
                           JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
