// SPDX-License-Identifier: GPL-3.0-or-later
// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019; the update of
// torch.optim.AdamW): on ATen tensors, so training needs no LibTorch C++ frontend.
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr * wd * p                                  (decoupled decay, before the Adam step)
//   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace ql {

struct AdamWOptions {
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.01;
    // true: one threaded pass over all parameters (kernels/adamw_update.h) for CPU tensors
    // (equal to the ATen path to float32 rounding, tests/engine/adamw_test.cpp). false: seven
    // ATen ops per tensor (the formula above as torch.optim.AdamW's for-loop runs it), and what
    // tensors on a GPU always take.
    bool fused = true;
};

class AdamW {
public:
    // params: leaf tensors with requires_grad. decay[i]: whether weight decay applies to
    // params[i] (typically matrices yes, norms and biases no); empty = all decay.
    AdamW(std::vector<at::Tensor> params, AdamWOptions options, std::vector<bool> decay = {});

    // One update with learning rate lr from the gradients in .grad(); parameters without a
    // gradient are skipped (their moments are kept).
    void step(double lr);
    void zero_grad();
    int64_t steps_taken() const { return step_; }

    // Optimizer state, for checkpoints: first and second moments in parameter order.
    const std::vector<at::Tensor>& first_moments() const { return m_; }
    const std::vector<at::Tensor>& second_moments() const { return v_; }
    // Resumes from a checkpoint: moments in parameter order (same shapes), steps taken.
    void restore(const std::vector<at::Tensor>& first, const std::vector<at::Tensor>& second, int64_t steps);

private:
    bool step_fused(double lr, double step_size, double bc2_sqrt);
    std::vector<at::Tensor> params_, m_, v_;
    std::vector<bool> decay_;
    AdamWOptions options_;
    int64_t step_ = 0;
};

// Scales all gradients so their global L2 norm is at most max_norm (torch.nn.utils.
// clip_grad_norm_); returns the norm before clipping (NaN/Inf passes through unclipped so the
// caller sees it).
double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace ql
