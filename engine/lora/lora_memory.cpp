// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/lora_memory.h"

#include <algorithm>
#include <cstdio>

namespace ql {

double MethodMemory::total_bytes() const {
    double t = 0;
    for (const MemoryLine& l : lines) t += l.bytes;
    return t;
}

double MethodMemory::bytes_of(const std::string& item) const {
    for (const MemoryLine& l : lines)
        if (l.item == item) return l.bytes;
    return 0;
}

double activation_bytes(const MemoryShape& s) {
    const double tokens = static_cast<double>(s.batch) * static_cast<double>(s.sequence);
    const double kv = static_cast<double>(s.kv_heads * s.head_dim);
    const double h = static_cast<double>(s.hidden), i = static_cast<double>(s.intermediate);
    // Per layer and token, elements kept for backward: attention norm input + output (2h), q, k, v
    // (h + 2 kv), context (h), o_proj input (counted in context) and output (h); MLP norm input +
    // output (2h), gate, up, act(gate), act * up (4 I), down output (h); scores and probabilities
    // 2 x heads x T.
    const double per_token = 2 * h + h + 2 * kv + h + h + 2 * h + 4 * i + h +
                             2.0 * static_cast<double>(s.heads) * static_cast<double>(s.sequence);
    const double blocks = per_token * tokens * static_cast<double>(s.layers) * 2.0;  // 16-bit
    const double logits = tokens * static_cast<double>(s.vocab) * 4.0 * 2.0;           // FP32 logits + softmax
    return blocks + logits;
}

TrainingMemoryEstimate estimate_training_memory(const MemoryShape& s, const std::string& quantized_base_name) {
    TrainingMemoryEstimate e;
    int64_t all = 0;
    double quant_bytes = 0, quant_scale_bytes = 0;
    bool any_quantized = false;
    for (const MemoryWeightGroup& g : s.groups) {
        all += g.parameters;
        quant_bytes += static_cast<double>(g.parameters) * (g.base_bits - g.scale_bits) / 8.0;
        quant_scale_bytes += static_cast<double>(g.parameters) * g.scale_bits / 8.0;
        any_quantized = any_quantized || g.base_bits < 16;
    }
    const double n = static_cast<double>(all);
    const double act = activation_bytes(s);
    const double adapter_bytes_per = s.adapter_dtype == "fp32" ? 4.0 : 2.0;
    const double na = static_cast<double>(s.adapter_parameters);

    MethodMemory full{"full fine-tuning", {}, all};
    full.lines = {{"weights", n * 2, "every parameter, 16-bit"},
                  {"gradients", n * 2, "every parameter, 16-bit"},
                  {"optimizer states", n * 8, "AdamW: two FP32 moments per parameter"},
                  {"activations", act, "kept for the backward pass, 16-bit (+ FP32 logits)"}};
    MethodMemory qat{"QAT", {}, all};
    qat.lines = full.lines;
    qat.lines[0].note = "16-bit master weights (fake-quantized in every forward)";
    qat.lines.push_back({"quantized weights (transient)", quant_bytes + quant_scale_bytes,
                         "one forward's quantized copy, at the deployed size"});
    const auto adapter_lines = [&](MethodMemory& m) {
        m.lines.push_back({"adapters", na * adapter_bytes_per, std::to_string(s.adapted_layers) + " layers x rank " +
                                                                   std::to_string(s.adapter_rank) + ", " + s.adapter_dtype});
        m.lines.push_back({"gradients", na * adapter_bytes_per, "adapters only (the base is frozen)"});
        m.lines.push_back({"optimizer states", na * 8, "AdamW: two FP32 moments per adapter parameter"});
        m.lines.push_back({"activations", act, "as full fine-tuning: the backward passes through the frozen base"});
    };
    MethodMemory lora{"LoRA (16-bit base)", {}, s.adapter_parameters};
    lora.lines = {{"base weights", n * 2, "every parameter, 16-bit, frozen"}};
    adapter_lines(lora);
    e.methods = {full, qat, lora};
    if (any_quantized) {
        MethodMemory q{quantized_base_name, {}, s.adapter_parameters};
        q.lines = {{"base weights (codes)", quant_bytes, "element codes of the quantized layers, 16-bit for the rest"},
                   {"base scales and constants", quant_scale_bytes, "block scales (and double-quantization constants)"}};
        adapter_lines(q);
        e.methods.push_back(q);
    }
    e.notes = {"16-bit mixed precision as a GPU trainer holds it; QuantLab's CPU emulation keeps FP32 master weights and "
               "dequantized FP32 copies of a quantized base instead (docs/TRAINING.md \"Memory\").",
               "Optimizer paging (bitsandbytes' paged AdamW) moves optimizer states to host memory when the GPU runs out; "
               "QuantLab does not page: the states stay where the model is."};
    return e;
}

std::string format_bytes(double bytes) {
    char buf[64];
    if (bytes >= 1024.0 * 1024 * 1024)
        std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
    else if (bytes >= 1024.0 * 1024)
        std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
    else
        std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
    return buf;
}

std::string memory_table(const TrainingMemoryEstimate& e) {
    std::vector<std::string> items;
    for (const MethodMemory& m : e.methods)
        for (const MemoryLine& l : m.lines)
            if (std::find(items.begin(), items.end(), l.item) == items.end()) items.push_back(l.item);
    std::string out;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-32s", "");
    out += buf;
    for (const MethodMemory& m : e.methods) {
        std::snprintf(buf, sizeof buf, " %28s", m.method.c_str());
        out += buf;
    }
    out += "\n";
    const auto row = [&](const std::string& label, auto value) {
        std::snprintf(buf, sizeof buf, "%-32s", label.c_str());
        out += buf;
        for (const MethodMemory& m : e.methods) {
            std::snprintf(buf, sizeof buf, " %28s", value(m).c_str());
            out += buf;
        }
        out += "\n";
    };
    for (const std::string& item : items)
        row(item, [&](const MethodMemory& m) {
            bool has = false;
            for (const MemoryLine& l : m.lines) has = has || l.item == item;
            return has ? format_bytes(m.bytes_of(item)) : std::string("-");
        });
    row("total", [](const MethodMemory& m) { return format_bytes(m.total_bytes()); });
    row("trainable parameters", [](const MethodMemory& m) { return std::to_string(m.trainable_parameters); });
    for (const std::string& n : e.notes) out += "note: " + n + "\n";
    return out;
}

}  // namespace ql
