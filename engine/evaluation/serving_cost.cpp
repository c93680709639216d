// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/serving_cost.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/eval/rank_statistics.h"
#include "engine/evaluation/json_fields.h"

namespace ql::evaluation {
namespace {

using nlohmann::ordered_json;

std::string cost_lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

ordered_json cost_nan_as_null(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

}  // namespace

const std::vector<NamedGpu>& named_gpus() {
    // Peak HBM / GDDR bandwidth from NVIDIA's product data sheets (decimal TB/s).
    static const std::vector<NamedGpu> gpus = {
        {"H200", 4.8e12, "NVIDIA H200 Tensor Core GPU data sheet: 4.8 TB/s HBM3e"},
        {"B200", 8.0e12, "NVIDIA DGX B200 data sheet: 8 TB/s HBM3e per GPU"},
        {"H100", 3.35e12, "NVIDIA H100 Tensor Core GPU data sheet: H100 SXM 3.35 TB/s HBM3"},
        {"H100-PCIe", 2.0e12, "NVIDIA H100 Tensor Core GPU data sheet: H100 NVL/PCIe 2 TB/s (80 GB PCIe)"},
        {"A100", 2.039e12, "NVIDIA A100 Tensor Core GPU data sheet: A100 80GB SXM 2,039 GB/s HBM2e"},
        {"L40S", 0.864e12, "NVIDIA L40S data sheet: 864 GB/s GDDR6"},
        {"RTX-4090", 1.008e12, "NVIDIA GeForce RTX 4090 specifications: 1,008 GB/s GDDR6X"},
        {"RTX-5090", 1.792e12, "NVIDIA GeForce RTX 5090 specifications: 1,792 GB/s GDDR7"},
    };
    return gpus;
}

const NamedGpu& find_gpu(const std::string& name) {
    std::string known;
    for (const NamedGpu& g : named_gpus()) {
        if (cost_lower(g.name) == cost_lower(name)) return g;
        known += (known.empty() ? "" : ", ") + g.name;
    }
    throw UserError("GPU '" + name + "' is not one QuantLab knows the memory bandwidth of; known: " + known);
}

GpuEstimate estimate_decode(const WeightMemory& weights, const KvCacheCost& kv, const NamedGpu& gpu, int64_t context,
                            double generated_tokens_per_success) {
    GpuEstimate e;
    e.gpu = gpu.name;
    e.bandwidth_bytes_per_s = gpu.bandwidth_bytes_per_s;
    e.context = context;
    e.bytes_per_token = static_cast<double>(weights.bytes()) + kv.bytes_per_token * static_cast<double>(context);
    e.decode_tokens_per_second = e.bytes_per_token > 0 ? gpu.bandwidth_bytes_per_s / e.bytes_per_token : 0.0;
    e.seconds_per_success = std::isfinite(generated_tokens_per_success) && e.decode_tokens_per_second > 0
                                ? generated_tokens_per_success / e.decode_tokens_per_second
                                : std::numeric_limits<double>::quiet_NaN();
    return e;
}

MeasuredSpeed measured_speed(const std::vector<GenerationTiming>& timings, const std::string& device) {
    MeasuredSpeed s;
    s.device = device;
    s.generations = static_cast<int64_t>(timings.size());
    std::vector<double> ttft;
    int64_t decoded = 0;  // tokens after each generation's first
    for (const GenerationTiming& t : timings) {
        s.prompt_tokens += t.prompt_tokens;
        s.generated_tokens += t.generated_tokens;
        s.prefill_seconds += t.prefill_seconds;
        s.decode_seconds += t.decode_seconds;
        decoded += std::max<int64_t>(0, t.generated_tokens - 1);
        ttft.push_back(t.prefill_seconds);
    }
    if (s.prefill_seconds > 0) s.prefill_tokens_per_second = static_cast<double>(s.prompt_tokens) / s.prefill_seconds;
    if (s.decode_seconds > 0) s.decode_tokens_per_second = static_cast<double>(decoded) / s.decode_seconds;
    if (!ttft.empty()) {
        s.ttft_mean_s = s.prefill_seconds / static_cast<double>(ttft.size());
        s.ttft_p50_s = percentile(ttft, 50);
        s.ttft_p95_s = percentile(ttft, 95);
    }
    return s;
}

ordered_json serving_cost_json(const ServingCost& c) {
    ordered_json w;
    w["parameters"] = c.weights.parameters;
    w["quantized_parameters"] = c.weights.quantized_parameters;
    w["code_bytes"] = c.weights.code_bytes;
    w["scale_bytes"] = c.weights.scale_bytes;
    w["global_scale_bytes"] = c.weights.global_scale_bytes;
    w["high_precision_bytes"] = c.weights.high_precision_bytes;
    w["bytes"] = c.weights.bytes();
    w["bits_per_parameter"] = c.weights.bits_per_parameter();
    w["layout"] = c.weights.layout;
    ordered_json kv;
    kv["format"] = c.kv.format;
    kv["layers"] = c.kv.layers;
    kv["kv_heads"] = c.kv.kv_heads;
    kv["head_dim"] = c.kv.head_dim;
    kv["bytes_per_token"] = c.kv.bytes_per_token;
    kv["contexts"] = ordered_json::array();
    for (const auto& [tokens, bytes] : c.kv.contexts) kv["contexts"].push_back({{"tokens", tokens}, {"bytes", bytes}});
    const MeasuredSpeed& m = c.measured;
    ordered_json ms;
    ms["device"] = m.device;
    ms["generations"] = m.generations;
    ms["prompt_tokens"] = m.prompt_tokens;
    ms["generated_tokens"] = m.generated_tokens;
    ms["prefill_seconds"] = m.prefill_seconds;
    ms["decode_seconds"] = m.decode_seconds;
    ms["prefill_tokens_per_second"] = m.prefill_tokens_per_second;
    ms["ttft_mean_s"] = m.ttft_mean_s;
    ms["ttft_p50_s"] = m.ttft_p50_s;
    ms["ttft_p95_s"] = m.ttft_p95_s;
    ms["decode_tokens_per_second"] = m.decode_tokens_per_second;
    ordered_json est = ordered_json::array();
    for (const GpuEstimate& e : c.estimates)
        est.push_back({{"gpu", e.gpu},
                       {"bandwidth_bytes_per_s", e.bandwidth_bytes_per_s},
                       {"context", e.context},
                       {"bytes_per_token", e.bytes_per_token},
                       {"decode_tokens_per_second", e.decode_tokens_per_second},
                       {"seconds_per_success", cost_nan_as_null(e.seconds_per_success)}});
    ordered_json j;
    j["weights"] = std::move(w);
    j["kv_cache"] = std::move(kv);
    j["measured"] = std::move(ms);
    j["estimates"] = std::move(est);
    j["successes"] = c.successes;
    j["trials"] = c.trials;
    j["seconds_per_success"] = cost_nan_as_null(c.seconds_per_success);
    return j;
}

ServingCost serving_cost_from_json(const nlohmann::json& j, const std::string& prefix) {
    const JsonFields f(j, prefix);
    f.only({"weights", "kv_cache", "measured", "estimates", "successes", "trials", "seconds_per_success"});
    ServingCost c;
    const JsonFields w = f.object("weights");
    w.only({"parameters", "quantized_parameters", "code_bytes", "scale_bytes", "global_scale_bytes", "high_precision_bytes", "bytes",
            "bits_per_parameter", "layout"});
    c.weights.parameters = w.integer("parameters");
    c.weights.quantized_parameters = w.integer("quantized_parameters");
    c.weights.code_bytes = w.integer("code_bytes");
    c.weights.scale_bytes = w.integer("scale_bytes");
    c.weights.global_scale_bytes = w.integer("global_scale_bytes");
    c.weights.high_precision_bytes = w.integer("high_precision_bytes");
    if (w.integer("bytes") != c.weights.bytes()) w.fail("bytes", "is not the sum of the code, scale, global scale and high-precision bytes");
    c.weights.layout = w.text("layout");
    const JsonFields kv = f.object("kv_cache");
    kv.only({"format", "layers", "kv_heads", "head_dim", "bytes_per_token", "contexts"});
    c.kv.format = kv.text("format");
    c.kv.layers = kv.integer("layers");
    c.kv.kv_heads = kv.integer("kv_heads");
    c.kv.head_dim = kv.integer("head_dim");
    c.kv.bytes_per_token = kv.non_negative("bytes_per_token");
    const nlohmann::json& contexts = kv.array("contexts");
    for (size_t i = 0; i < contexts.size(); ++i) {
        const JsonFields ctx(contexts[i], prefix + "kv_cache.contexts[" + std::to_string(i) + "].");
        ctx.only({"tokens", "bytes"});
        c.kv.contexts.emplace_back(ctx.integer("tokens", 1), ctx.non_negative("bytes"));
    }
    const JsonFields m = f.object("measured");
    m.only({"device", "generations", "prompt_tokens", "generated_tokens", "prefill_seconds", "decode_seconds", "prefill_tokens_per_second",
            "ttft_mean_s", "ttft_p50_s", "ttft_p95_s", "decode_tokens_per_second"});
    c.measured.device = m.text("device");
    c.measured.generations = m.integer("generations");
    c.measured.prompt_tokens = m.integer("prompt_tokens");
    c.measured.generated_tokens = m.integer("generated_tokens");
    c.measured.prefill_seconds = m.non_negative("prefill_seconds");
    c.measured.decode_seconds = m.non_negative("decode_seconds");
    c.measured.prefill_tokens_per_second = m.non_negative("prefill_tokens_per_second");
    c.measured.ttft_mean_s = m.non_negative("ttft_mean_s");
    c.measured.ttft_p50_s = m.non_negative("ttft_p50_s");
    c.measured.ttft_p95_s = m.non_negative("ttft_p95_s");
    c.measured.decode_tokens_per_second = m.non_negative("decode_tokens_per_second");
    const nlohmann::json& estimates = f.array("estimates");
    for (size_t i = 0; i < estimates.size(); ++i) {
        const JsonFields e(estimates[i], prefix + "estimates[" + std::to_string(i) + "].");
        e.only({"gpu", "bandwidth_bytes_per_s", "context", "bytes_per_token", "decode_tokens_per_second", "seconds_per_success"});
        GpuEstimate g;
        g.gpu = e.text("gpu");
        g.bandwidth_bytes_per_s = e.non_negative("bandwidth_bytes_per_s");
        g.context = e.integer("context");
        g.bytes_per_token = e.non_negative("bytes_per_token");
        g.decode_tokens_per_second = e.non_negative("decode_tokens_per_second");
        g.seconds_per_success = e.optional_number("seconds_per_success").value_or(std::numeric_limits<double>::quiet_NaN());
        c.estimates.push_back(g);
    }
    c.successes = f.integer("successes");
    c.trials = f.integer("trials");
    c.seconds_per_success = f.optional_number("seconds_per_success").value_or(std::numeric_limits<double>::quiet_NaN());
    return c;
}

}  // namespace ql::evaluation
