// SPDX-License-Identifier: GPL-3.0-or-later
// What fine-tuning a model needs in accelerator memory, method by method (docs/TRAINING.md
// "Memory"): the weights (for a quantized base its codes and scales, double-quantization
// constants included), the trainable parameters' gradients and optimizer states, and the
// activations a backward pass keeps. Accounted as a GPU trainer in 16-bit mixed precision holds
// them (the QLoRA paper's accounting, Dettmers et al. 2023, section 1: 16-bit weights and
// gradients, two FP32 Adam moments), not as QuantLab's CPU emulation holds them (FP32 master
// weights beside the dequantized copies; the estimate says so). Plain C++ (no LibTorch): the
// facade and a later general pre-flight estimate (issue 34) take it as it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

// One tensor group of the model as the estimate sees it.
struct MemoryWeightGroup {
    std::string name;        // "linear layers", "embeddings and norms" ...
    int64_t parameters = 0;
    double base_bits = 16;   // bits per parameter of the frozen base (codes + scales), e.g. 4.127 for NF4 + double quant
    double scale_bits = 0;   // of base_bits: the scales and constants (absmax, double-quant codes ...)
};

struct MemoryShape {
    std::string model;
    std::vector<MemoryWeightGroup> groups;  // every parameter once
    int64_t adapter_parameters = 0;         // LoRA's A and B, all layers
    int64_t adapter_rank = 0;
    int64_t adapted_layers = 0;
    std::string adapter_dtype = "bf16";     // fp32 | bf16
    // Activations: a decoder's dimensions and one micro-batch.
    int64_t layers = 0, hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
    int64_t batch = 1, sequence = 256;
};

struct MemoryLine {
    std::string item;  // "base weights (codes)", "optimizer states" ...
    double bytes = 0;
    std::string note;  // how it was counted
};

struct MethodMemory {
    std::string method;  // "full fine-tuning", "QAT", "LoRA (16-bit base)", "QLoRA"
    std::vector<MemoryLine> lines;
    int64_t trainable_parameters = 0;
    double total_bytes() const;
    double bytes_of(const std::string& item) const;  // 0 when absent
};

struct TrainingMemoryEstimate {
    std::vector<MethodMemory> methods;  // full fine-tuning, QAT, LoRA on a 16-bit base, this run's base
    std::vector<std::string> notes;
};

// The methods side by side for one model and micro-batch. `quantized_base_name` names the last
// column ("QLoRA (NF4 + double quant)"); with no quantized groups it is omitted.
TrainingMemoryEstimate estimate_training_memory(const MemoryShape& shape, const std::string& quantized_base_name);

// Activation bytes one micro-batch keeps for the backward pass (16-bit), counted per decoder
// layer and token: the inputs of every matrix product and norm, the attention scores and
// probabilities (2 heads x T per token), the MLP's gate / up / activation / product, plus the
// FP32 logits and their softmax. Documented in docs/TRAINING.md.
double activation_bytes(const MemoryShape& shape);

// "1.23 GiB", "456.0 MiB" ...
std::string format_bytes(double bytes);
// The estimate as a fixed-width table (CLI --dry-run).
std::string memory_table(const TrainingMemoryEstimate& e);

}  // namespace ql
