// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/flight_recorder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/core/errors.h"
#include "engine/diagnosis/hidden_error.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/saturation_mask.h"

namespace ql {

// What one record reads of a layer's weight quantizer. Outside the anonymous namespace because
// FlightRecorder::Layer, a member of a class with external linkage, holds two (GCC's
// -Wsubobject-linkage in a unity batch).
struct FlightRecorderLayerState {
    std::vector<uint8_t> codes;   // element codes, `code_bytes` bytes each
    int code_bytes = 1;
    double amax = 0;
    std::vector<float> scales;
    std::optional<float> global_scale;
    double clipped = 0;            // elements outside the range
    double elements = 0;
};

namespace {

using LayerState = FlightRecorderLayerState;

std::vector<float> floats_of(const at::Tensor& t) {
    const at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// LSQ's learned steps broadcast to the [out, in] weight: [1], [out] (per channel), or
// [out, in / g] (per group of g along the inputs; encode_buffer's layout).
at::Tensor broadcast_steps(const at::Tensor& steps, const at::Tensor& w) {
    if (steps.numel() == 1) return steps.reshape({1, 1});
    if (steps.dim() == 1) return steps.reshape({-1, 1});
    return steps.repeat_interleave(w.size(-1) / steps.size(-1), -1);
}

LayerState read_state(LayerQuantizer& l) {
    c10::NoGradGuard no_grad;
    LayerState s;
    const at::Tensor w = l.layer().weight.detach().reshape(weight_matrix_shape(l.layer())).to(at::kFloat).contiguous();
    s.amax = w.numel() ? w.abs().max().item<double>() : 0.0;
    s.elements = static_cast<double>(w.numel());
    if (at::Tensor* steps = l.learned_scales()) {
        // Codes are round(w / s) clamped to the format's integer range, as LSQ's forward computes.
        const double qmax = l.weight_spec().info->element_max;
        const at::Tensor scaled = w / broadcast_steps(steps->detach(), w);
        const at::Tensor codes = scaled.round().clamp(-qmax, qmax).to(at::kCPU, at::kChar).contiguous();
        s.codes.assign(reinterpret_cast<const uint8_t*>(codes.data_ptr<int8_t>()),
                       reinterpret_cast<const uint8_t*>(codes.data_ptr<int8_t>()) + codes.numel());
        s.clipped = scaled.abs().gt(qmax).sum().item<double>();
        s.scales = floats_of(*steps);
        return s;
    }
    const EncodedTensor e = l.encode_weight();
    s.codes = e.codes.bytes;
    s.code_bytes = dtype_size(e.codes.dtype);
    s.scales = e.scales.numel() ? e.scales.to_floats() : std::vector<float>();
    s.global_scale = e.global_scale;
    try {
        s.clipped = saturated_elements(w, l.weight_spec()).sum().item<double>();
    } catch (const UserError&) {
        s.clipped = std::nan("");  // GGUF formats: not modelled (saturation_mask.h)
    }
    return s;
}

double changed_elements(const LayerState& a, const LayerState& b) {
    if (a.codes.size() != b.codes.size() || a.code_bytes != b.code_bytes) return std::nan("");
    const size_t w = static_cast<size_t>(a.code_bytes);
    double changed = 0;
    for (size_t i = 0; i < a.codes.size(); i += w) changed += std::memcmp(&a.codes[i], &b.codes[i], w) != 0;
    return changed;
}

double scale_drift(const std::vector<float>& now, const std::vector<float>& start) {
    if (now.size() != start.size() || now.empty()) return std::nan("");
    double sum = 0;
    int64_t n = 0;
    for (size_t i = 0; i < now.size(); ++i)
        if (start[i] > 0 && std::isfinite(start[i]) && std::isfinite(now[i])) {
            sum += std::fabs(now[i] - start[i]) / start[i];
            ++n;
        }
    return n ? sum / static_cast<double>(n) : 0.0;
}

}  // namespace

struct FlightRecorder::Layer {
    LayerQuantizer* quantizer = nullptr;
    LayerState start, last;
};

FlightRecorder::FlightRecorder(QuantizedModel& q, Model* teacher, int64_t every) : q_(q), teacher_(teacher), every_(every) {
    if (every <= 0) throw UserError("training: the flight recorder's interval (--record-every) must be positive");
}

FlightRecorder::~FlightRecorder() = default;

bool FlightRecorder::due(int64_t steps_done, int64_t last) const {
    return steps_done == 0 || steps_done == last || steps_done % every_ == 0;
}

void FlightRecorder::note_step(double ce_part, double kl_part) {
    ce_sum_ += ce_part;
    kl_sum_ += kl_part;
    ++window_steps_;
}

FlightRecorder::Capture::Capture(FlightRecorder& r, bool active) : recorder_(r), active_(active && r.teacher_) {
    if (!active_) return;
    auto record_into = [](Model& m, std::vector<at::Tensor>& into) {
        into.assign(static_cast<size_t>(m.residual_stream().blocks()), at::Tensor());
        m.residual_stream().set_tap([&into](size_t stage, const at::Tensor& x) {
            // Block outputs are the even stages after the embeddings (residual_stream.h).
            if (stage > 0 && stage % 2 == 0 && stage / 2 - 1 < into.size()) into[stage / 2 - 1] = x.detach();
            return x;
        });
    };
    record_into(r.q_.model(), r.student_blocks_);
    record_into(*r.teacher_, r.teacher_blocks_);
}

FlightRecorder::Capture::~Capture() {
    if (!active_) return;
    recorder_.q_.model().residual_stream().set_tap({});
    recorder_.teacher_->residual_stream().set_tap({});
}

void FlightRecorder::record(int64_t steps, JobSink& sink) {
    if (!started_) {
        for (const auto& l : q_.layers()) {
            if (!l->weight_enabled()) continue;
            auto layer = std::make_unique<Layer>();
            layer->quantizer = l.get();
            layers_.push_back(std::move(layer));
        }
    }
    double flips_last = 0, flips_start = 0, clipped = 0, elements = 0;
    for (const auto& layer : layers_) {
        const LayerState now = read_state(*layer->quantizer);
        if (!started_) layer->start = layer->last = now;
        const std::string& name = layer->quantizer->name();
        const double changed_last = changed_elements(now, layer->last), changed_start = changed_elements(now, layer->start);
        sink.metric(steps, "flight/flips_since_last/" + name, changed_last / now.elements);
        sink.metric(steps, "flight/flips_since_start/" + name, changed_start / now.elements);
        sink.metric(steps, "flight/clip_fraction/" + name, now.clipped / now.elements);
        sink.metric(steps, "flight/amax_drift/" + name, layer->start.amax > 0 ? now.amax / layer->start.amax - 1 : 0.0);
        sink.metric(steps, "flight/scale_drift/" + name, scale_drift(now.scales, layer->start.scales));
        if (now.global_scale && layer->start.global_scale && *layer->start.global_scale > 0)
            sink.metric(steps, "flight/global_scale_drift/" + name, *now.global_scale / *layer->start.global_scale - 1);
        flips_last += changed_last;
        flips_start += changed_start;
        clipped += now.clipped;
        elements += now.elements;
        layer->last = now;
    }
    if (elements > 0) {
        sink.metric(steps, "flight/flips_since_last", flips_last / elements);
        sink.metric(steps, "flight/flips_since_start", flips_start / elements);
        sink.metric(steps, "flight/clip_fraction", clipped / elements);
    }
    // Teacher-student distance at every block output (QAD, captured on this step's batch).
    const std::vector<ResidualStage>& stages = q_.model().residual_stream().stages();
    for (size_t b = 0; b < student_blocks_.size() && b < teacher_blocks_.size(); ++b) {
        if (!student_blocks_[b].defined() || !teacher_blocks_[b].defined()) continue;
        const at::Tensor mask = at::ones(student_blocks_[b].sizes().slice(0, student_blocks_[b].dim() - 1),
                                         at::TensorOptions().dtype(at::kBool));
        HiddenErrorSums d;
        d.add(student_blocks_[b], teacher_blocks_[b], mask);
        const std::string block = 2 * b + 2 < stages.size() ? stages[2 * b + 2].block_name : std::to_string(b);
        sink.metric(steps, "flight/block_distance/" + block, d.result().rel_l2);
    }
    student_blocks_.clear();
    teacher_blocks_.clear();

    if (window_steps_ > 0) {
        const double ce = ce_sum_ / static_cast<double>(window_steps_), kl = kl_sum_ / static_cast<double>(window_steps_);
        sink.metric(steps, "flight/loss_ce_part", ce);
        sink.metric(steps, "flight/loss_kl_part", kl);
        const double loss = ce + kl;
        window_loss_.push_back(loss);
        window_flips_.push_back(flips_last);
        if (window_loss_.size() == 1 || loss < best_window_loss_) best_window_loss_ = loss;
        // Stagnation: two windows without a code change and a flat loss. Divergence: the loss
        // well above its best. Both relative, with an absolute floor (kLossResolution): a
        // model whose loss is already ~1e-5 nats (the shipped demo) moves by multiples of that
        // from batch to batch, which is neither a trend nor a divergence.
        const size_t n = window_loss_.size();
        const double moved = std::fabs(window_loss_[n - 1] - (n >= 2 ? window_loss_[n - 2] : window_loss_[n - 1]));
        const bool stagnating = n >= 2 && window_flips_[n - 1] == 0 && window_flips_[n - 2] == 0 &&
                                moved <= std::max(0.01 * std::fabs(window_loss_[n - 2]), kLossResolution);
        const bool diverging = n >= 2 && std::isfinite(loss) && loss > 1.5 * best_window_loss_ && best_window_loss_ > 0 &&
                               loss - best_window_loss_ > kLossResolution;
        if (stagnating && !stagnating_)
            sink.log(LogLevel::Warning, "step " + std::to_string(steps) + ": the run stagnates: no weight code changed in the last " +
                                            std::to_string(2 * every_) + " steps and the loss is flat (raise the learning rate, "
                                            "or stop: the quantized weights no longer move)");
        if (diverging && !diverging_)
            sink.log(LogLevel::Warning, "step " + std::to_string(steps) + ": the run diverges: the mean loss " +
                                            std::to_string(loss) + " is above 1.5 x its best " + std::to_string(best_window_loss_) +
                                            " (lower the learning rate; --keep-best keeps the best checkpoint)");
        stagnating_ = stagnating;
        diverging_ = diverging;
        sink.metric(steps, "flight/stagnating", stagnating ? 1.0 : 0.0);
        sink.metric(steps, "flight/diverging", diverging ? 1.0 : 0.0);
    }
    ce_sum_ = kl_sum_ = 0;
    window_steps_ = 0;
    started_ = true;
}

}  // namespace ql
