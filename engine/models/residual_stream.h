// SPDX-License-Identifier: GPL-3.0-or-later
// The residual stream of a transformer as a sequence of stages, so that depth-wise diagnosis
// (engine/diagnosis) can read the hidden state between sub-layers and replace it, without a
// forward pass of its own per architecture.
//
// Stage 0 is the embeddings' output (the input of block 0); block i then has stage 2i+1, the
// stream after its attention half (residual added; BERT: after the attention LayerNorm), and
// stage 2i+2, the stream after its MLP half = the block's output. The final norm and the head
// come after the last stage and belong to no stage.
//
// A model passes the stream through pass(k, x) at every stage boundary; with a tap set, the tap
// sees x [B, T, hidden] and returns the tensor the forward continues with (x itself to only read
// it, another tensor of the same shape to replace it). A tap may throw ResidualStreamStop to end
// the forward early once it has what it needs; the caller catches it. No tap: pass is free.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ql {

struct ResidualStage {
    enum class Part { Embeddings, Attention, Mlp };
    Part part = Part::Embeddings;
    int64_t block = -1;          // -1 for the embeddings
    std::string block_name;      // "model.layers.3" (HF module prefix); "embeddings" for stage 0
    std::vector<std::string> layers;  // the quantizable layers this stage computes, forward order
};

const char* residual_part_name(ResidualStage::Part part);  // "embeddings", "attention", "mlp"

using ResidualTap = std::function<at::Tensor(size_t stage, const at::Tensor& x)>;

// Thrown by a tap to abandon the rest of a forward pass.
class ResidualStreamStop : public std::exception {
public:
    const char* what() const noexcept override { return "residual stream stopped by its tap"; }
};

class ResidualStream {
public:
    const std::vector<ResidualStage>& stages() const { return stages_; }
    // Transformer blocks (stages() has 2 * blocks() + 1 entries; 0 for models without a stream).
    int64_t blocks() const { return stages_.empty() ? 0 : static_cast<int64_t>(stages_.size() - 1) / 2; }

    void set_tap(ResidualTap tap) { tap_ = std::move(tap); }
    bool tapped() const { return static_cast<bool>(tap_); }
    at::Tensor pass(size_t stage, const at::Tensor& x) const { return tap_ ? tap_(stage, x) : x; }

    // Registration by the model's constructor, in forward order.
    void add_stage(ResidualStage stage) { stages_.push_back(std::move(stage)); }

private:
    std::vector<ResidualStage> stages_;
    ResidualTap tap_;
};

// Sets a tap for the lifetime of this object and removes it after (also when a forward throws).
class ScopedResidualTap {
public:
    ScopedResidualTap(ResidualStream& stream, ResidualTap tap) : stream_(stream) { stream_.set_tap(std::move(tap)); }
    ~ScopedResidualTap() { stream_.set_tap({}); }
    ScopedResidualTap(const ScopedResidualTap&) = delete;
    ScopedResidualTap& operator=(const ScopedResidualTap&) = delete;

private:
    ResidualStream& stream_;
};

}  // namespace ql
