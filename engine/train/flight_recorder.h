// SPDX-License-Identifier: GPL-3.0-or-later
// The QAT/QAD flight recorder (docs/DIAGNOSIS.md "Flight recorder"): every N optimizer steps,
// per quantized layer, what the quantizers do during training, reported as metric series so a
// project file holds them and the dashboard shows them live as layers x steps heatmaps.
//
// Series (step = optimizer steps completed; <layer> an HF module name, <block> a block prefix):
//   flight/flips_since_last/<layer>   fraction of weight element codes changed since the last record
//   flight/flips_since_start/<layer>  ... since the first record (the start of training)
//   flight/clip_fraction/<layer>      fraction of weight elements outside the quantizer's range
//                                     (the STE's zero-gradient mask with --clip-gradient)
//   flight/amax_drift/<layer>         weight amax / its value at the start - 1
//   flight/scale_drift/<layer>        mean over the weight's scales (block / group / channel; LSQ's
//                                     learned steps when on) of |s - s0| / s0
//   flight/global_scale_drift/<layer> NVFP4's per-tensor global scale / its start - 1
//   flight/block_distance/<block>     QAD: relative L2 distance of the student's residual stream
//                                     from the teacher's at the block's output, on the record
//                                     step's first micro-batch
//   flight/flips_since_last, flight/flips_since_start, flight/clip_fraction   all layers (by elements)
//   flight/loss_ce_part, flight/loss_kl_part   the mean weighted CE and KL terms of the loss since
//                                     the last record (QAT: CE only)
//   flight/stagnating, flight/diverging   1 while the warning holds, else 0 (also logged once):
//     stagnating = no code changed in the last two windows and the loss moved < 1 % between them
//                  (or less than kLossResolution);
//     diverging  = the window's mean loss is above 1.5 x the best window's mean, and more than
//                  kLossResolution above it.
// Cost: one encode of every quantized weight per record (bench/flight_recorder_bench.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/jobs/job.h"
#include "engine/quant/quantized_model.h"

namespace ql {

// Loss changes (nats per token) below this are batch noise for the warnings, not a trend: a
// near-perfect model's loss of 1e-5 doubling is no divergence.
inline constexpr double kLossResolution = 1e-3;

class FlightRecorder {
public:
    // every > 0. `teacher` (QAD) may be null. The model must outlive the recorder.
    FlightRecorder(QuantizedModel& student, Model* teacher, int64_t every);
    ~FlightRecorder();
    FlightRecorder(const FlightRecorder&) = delete;
    FlightRecorder& operator=(const FlightRecorder&) = delete;

    // Whether the state after `steps_done` optimizer steps is recorded (0, every N, `last`).
    bool due(int64_t steps_done, int64_t last) const;

    // Every optimizer step: the loss's weighted parts (ce_part + kl_part = loss).
    void note_step(double ce_part, double kl_part);

    // Captures the block outputs of the student's (and teacher's) next forward passes: install
    // before the forward of a recorded step's first micro-batch, remove (reset) after it. The
    // student's tensors are recorded detached; the forward itself is unchanged.
    class Capture {
    public:
        Capture(FlightRecorder& recorder, bool active);
        ~Capture();
        Capture(const Capture&) = delete;
        Capture& operator=(const Capture&) = delete;

    private:
        FlightRecorder& recorder_;
        bool active_;
    };

    // Records the state after `steps_done` steps: the first call sets the start.
    void record(int64_t steps_done, JobSink& sink);

private:
    struct Layer;
    QuantizedModel& q_;
    Model* teacher_;
    int64_t every_;
    std::vector<std::unique_ptr<Layer>> layers_;
    bool started_ = false;
    double ce_sum_ = 0, kl_sum_ = 0;
    int64_t window_steps_ = 0;
    std::vector<double> window_loss_, window_flips_;
    double best_window_loss_ = 0;
    bool stagnating_ = false, diverging_ = false;
    std::vector<at::Tensor> student_blocks_, teacher_blocks_;  // block outputs of the captured forward
};

}  // namespace ql
