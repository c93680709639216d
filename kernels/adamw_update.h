// SPDX-License-Identifier: GPL-3.0-or-later
// The AdamW update (engine/train/adamw.h, torch.optim.AdamW) of many float32 parameter tensors
// in one threaded pass: per element, in float32 and in the order the ATen ops of the unfused
// path run them,
//   p = p * decay_factor
//   m = m * beta1 + one_minus_beta1 * g
//   v = v * beta2 + (one_minus_beta2 * g) * g
//   p = p + neg_step_size * (m / (sqrt(v) / bc2_sqrt + eps))
// One read of p, g, m, v and one write of p, m, v per element, where the unfused path ran seven
// ATen ops per tensor (one of them allocating) and two thread-pool hand-offs each. Not bit-equal
// to that path: ATen contracts m + a * g into a fused multiply-add where the CPU has one and
// divides by a scalar as a multiplication by its reciprocal; tests/engine/adamw_test.cpp bounds
// the difference.
#pragma once

#include <cstdint>

namespace ql::kernels {

// One parameter tensor: n contiguous floats each of p (updated), g (read), m and v (updated).
struct AdamWSegment {
    float* p;
    const float* g;
    float* m;
    float* v;
    int64_t n;
    float decay_factor;  // 1 - lr * weight_decay, or 1 for a parameter that does not decay
};

// The step's scalars, already rounded to float32 as ATen rounds its scalar arguments.
struct AdamWCoefficients {
    float beta1, one_minus_beta1;
    float beta2, one_minus_beta2;
    float neg_step_size;  // -lr / (1 - beta1^t)
    float bc2_sqrt;       // sqrt(1 - beta2^t)
    float eps;
};

// Updates every segment; the elements of all segments are split evenly over the OpenMP threads.
// Segments must not overlap.
void adamw_update(const AdamWSegment* segments, int64_t count, const AdamWCoefficients& c);

}  // namespace ql::kernels
