// SPDX-License-Identifier: GPL-3.0-or-later
// What a model in a given format costs to serve (docs/EVAL_SUITES.md "Serving cost"): the bytes
// its weights take in a real deployment layout (element codes, block / group / channel scales,
// per-tensor global scales, the unquantized rest at 16 bits), the KV cache per context length,
// the speed measured while it answered the suite on this machine, a bandwidth-bound estimate of
// its decode speed on a named GPU (always an estimate), and the seconds per successful answer.
// Plain C++; weight_memory.h measures the layouts on a loaded model.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ql::evaluation {

// Bytes of the weights as deployed. Quantized layers are counted in the tensors their export
// writes (Model Optimizer's unified HF checkpoint, else compressed-tensors; a GGUF file's own
// tensors), with a format estimate (ModelSize's weight_storage_bits) only where neither layout
// represents the layer; every other parameter at 16 bits (BF16), tied embeddings once.
struct WeightMemory {
    int64_t parameters = 0;            // model parameters, tied weights once
    int64_t quantized_parameters = 0;  // elements of quantized weight matrices
    int64_t code_bytes = 0;            // packed element codes of the quantized weights
    int64_t scale_bytes = 0;           // block / group / channel scales and zero points
    int64_t global_scale_bytes = 0;    // per-tensor scales (NVFP4 weight_scale_2, input scales), AWQ pre_quant_scale
    int64_t high_precision_bytes = 0;  // the unquantized parameters at 16 bits (a GGUF: its F32/F16 tensors)
    std::string layout;                // how the bytes were counted, e.g. "Model Optimizer HF checkpoint (210 layers)"
    int64_t bytes() const { return code_bytes + scale_bytes + global_scale_bytes + high_precision_bytes; }
    double bits_per_parameter() const {
        return parameters ? 8.0 * static_cast<double>(bytes()) / static_cast<double>(parameters) : 0.0;
    }
};

// The KV cache: K and V of every attention layer per token of context.
struct KvCacheCost {
    std::string format;                // "bf16", or the recipe's KV format described
    int64_t layers = 0, kv_heads = 0, head_dim = 0;
    double bytes_per_token = 0;        // scales included
    std::vector<std::pair<int64_t, double>> contexts;  // (tokens of context, bytes for one sequence)
};

// Speed measured while the model answered the suite here (one sequence at a time). QuantLab
// simulates quantized formats (fake quantization in float32), so these are this machine's
// numbers for the simulation, not the format's speed on hardware that runs it natively.
struct MeasuredSpeed {
    std::string device;                // "cpu (2 threads)", "cuda:0"
    int64_t generations = 0;           // items x replicates
    int64_t prompt_tokens = 0, generated_tokens = 0;
    double prefill_seconds = 0, decode_seconds = 0;
    double prefill_tokens_per_second = 0;   // prompt tokens / prefill seconds
    double ttft_mean_s = 0, ttft_p50_s = 0, ttft_p95_s = 0;  // time to first token per generation
    double decode_tokens_per_second = 0;    // tokens after the first / decode seconds
};

// A GPU's memory bandwidth (vendor data sheet), for the decode estimate.
struct NamedGpu {
    std::string name;                  // "H200"
    double bandwidth_bytes_per_s = 0;  // 4.8e12
    std::string source;                // where the number comes from
};
// H200, B200, H100 (SXM), H100-PCIe, A100 (80 GB SXM), L40S, RTX-4090, RTX-5090.
const std::vector<NamedGpu>& named_gpus();
// Case-insensitive; UserError listing the known names otherwise.
const NamedGpu& find_gpu(const std::string& name);

// Decoding one token at batch 1 reads every weight once and the KV cache of the context: an
// upper bound on tokens/s from memory bandwidth alone (compute, kernel launches, dequantization
// and the activations ignored). Labelled an estimate wherever it is shown.
struct GpuEstimate {
    std::string gpu;
    double bandwidth_bytes_per_s = 0;
    int64_t context = 0;               // tokens of context the KV read assumes
    double bytes_per_token = 0;        // weights + KV cache at `context`
    double decode_tokens_per_second = 0;
    double seconds_per_success = 0;    // generated tokens per success / the estimated rate (NaN without successes)
};
GpuEstimate estimate_decode(const WeightMemory& weights, const KvCacheCost& kv, const NamedGpu& gpu, int64_t context,
                            double generated_tokens_per_success);

struct ServingCost {
    WeightMemory weights;
    KvCacheCost kv;
    MeasuredSpeed measured;
    std::vector<GpuEstimate> estimates;
    int64_t successes = 0, trials = 0; // over all replicates
    // Wall seconds of generation here per successful answer: (prefill + decode seconds) /
    // successes; NaN without a success.
    double seconds_per_success = 0;
};

// The aggregate speed of generations: per generation its prompt tokens, generated tokens,
// prefill seconds (= time to first token) and decode seconds.
struct GenerationTiming {
    int64_t prompt_tokens = 0, generated_tokens = 0;
    double prefill_seconds = 0, decode_seconds = 0;
};
MeasuredSpeed measured_speed(const std::vector<GenerationTiming>& timings, const std::string& device);

nlohmann::ordered_json serving_cost_json(const ServingCost& c);
// UserError-free parsing helper for evaluation_run.cpp: throws JsonFieldError (json_fields.h).
ServingCost serving_cost_from_json(const nlohmann::json& j, const std::string& prefix);

}  // namespace ql::evaluation
