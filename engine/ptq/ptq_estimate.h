// SPDX-License-Identifier: GPL-3.0-or-later
// The pre-flight estimate of run_ptq_pipeline (engine/core/job_estimate.h): peak resident memory
// from the model's shapes and stored dtypes, the recipe, the calibration data's shape and the
// pipeline's options, as the pipeline holds things (ptq_pipeline.h); time from the work of
// ptq_cost.h at this machine's measured matrix-multiply rate.
//
// Layer by layer, the peak is the largest of: the embedding phase (the embedding table's pages
// and the activations), each block (the activations between blocks; the block's mapped weights;
// its float32 copies: the FP weights kept for the error report, the quantized weights; the
// sampled inputs; GPTQ's Hessians and its solve; one batch's forward: the MLP and the T x T
// attention scores) and the layers outside blocks. Without release_parts every block's weight
// pages and quantized weights stay. Whole model: all of it at once, plus one batch's forward.
#pragma once

#include <cstdint>

#include "engine/core/job_estimate.h"
#include "engine/ptq/ptq_pipeline.h"

namespace ql {

JobEstimate estimate_ptq(const QuantizedModel& q, int64_t samples, int64_t tokens, const PtqOptions& options);

// This machine's float32 matrix-multiply rate in GFLOP/s: the best of three [512, 2048] x
// [2048, 2048] products on LibTorch's threads (~0.1 s), measured once per process.
double measured_gemm_gflops();

}  // namespace ql
