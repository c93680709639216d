// SPDX-License-Identifier: GPL-3.0-or-later
// The quantized wrapper of one Linear / Conv2d layer: it installs itself into the layer's
// weight_quantizer / input_quantizer hooks and holds the state PTQ produces -- the calibrated
// input amax, an optional per-input-channel pre_quant_scale (AWQ / SmoothQuant where it could not
// be folded), and the quantized weight. Both quantizers can be switched on and off at run time.
//
// Forward with the wrapper installed (x [..., in], W [out, in]):
//   x' = x * pre_quant_scale (when set);  x'' = input quantizer(x') (when enabled)
//   W'' = quantized weight (when enabled; computed once from W and cached)
//   y   = x'' W''^T + b
// The cache is keyed on the weight tensor's version counter, so an in-place change of the
// weight (an optimiser step, load_state) re-quantizes it. A pinned weight (GPTQ's result, or one
// read from a QuantLab checkpoint) is used as long as the weight is unchanged.
// Training (QAT / QAD): when autograd records and the weight requires grad, the weight is
// fake-quantized afresh in every forward with a straight-through estimator (no cache), and an
// input that requires grad likewise (engine/quant/straight_through.h); otherwise the cached
// inference path runs. The two give bit-identical forward values.
#pragma once

#include <ATen/core/Tensor.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/quant/lsq_quantizer.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/shared_weight_amax.h"

namespace ql {

class LayerQuantizer {
public:
    // Installs the hooks; the layer must outlive this object, which uninstalls them on destruction.
    explicit LayerQuantizer(LayerQuantPlan plan);
    ~LayerQuantizer();
    LayerQuantizer(const LayerQuantizer&) = delete;
    LayerQuantizer& operator=(const LayerQuantizer&) = delete;

    QuantizableLayer& layer() const { return *plan_.layer; }
    const std::string& name() const { return plan_.layer->name; }
    const LayerQuantPlan& plan() const { return plan_; }
    bool weight_configured() const { return plan_.weight.enabled; }
    bool input_configured() const { return plan_.input.enabled; }
    // Static input quantizers need a calibrated amax (NVFP4: the global scale; FP8 / INT per tensor).
    bool input_needs_amax() const;

    // Run-time switches (only configured quantizers can be on).
    void set_weight_enabled(bool on) { weight_on_ = on && weight_configured(); }
    void set_input_enabled(bool on) { input_on_ = on && input_configured(); }
    void set_enabled(bool on) { set_weight_enabled(on); set_input_enabled(on); }
    bool weight_enabled() const { return weight_on_; }
    bool input_enabled() const { return input_on_; }

    // Calibrated per-tensor input amax (NaN = not calibrated).
    float input_amax() const { return input_amax_; }
    void set_input_amax(float amax) { input_amax_ = amax; }

    // [in] float32 multiplying the input (x * s), or undefined.
    const at::Tensor& pre_quant_scale() const { return pre_quant_scale_; }
    void set_pre_quant_scale(const at::Tensor& s);

    // The weight as quantized forward passes use it (layer weight shape), computing it if needed.
    at::Tensor quantized_weight();
    void pin_quantized_weight(const at::Tensor& q);  // same shape as the weight
    bool weight_pinned() const;
    // The weight quantizer's spec for this weight; with a shared amax (fused layers), its
    // fixed_amax is the group's current amax.
    QuantSpec weight_spec() const;
    // Fused-layer scale sharing (shared_weight_amax.h, set by QuantizedModel): only for
    // per-tensor-scaled weights (NVFP4, FP8 / INT per tensor); nullptr switches it off.
    void set_shared_weight_amax(std::shared_ptr<const SharedWeightAmax> shared);
    const SharedWeightAmax* shared_weight_amax() const { return shared_amax_.get(); }
    QuantSpec input_spec_for_forward() const;
    // GGUF weight formats: per-input-column importance for the weight's K-quant / IQ4 / Q4_0
    // search (ggml's imatrix values: the mean square input of each column; [in] floats, finite,
    // >= 0). Re-quantizes the weight on the next use; UserError for a wrong length or another
    // format family (set_importance in format_codec.h). Empty: back to the plain search.
    void set_weight_importance(std::vector<float> importance);
    // The weight's scales in its format (decoded block / group / channel scales, NVFP4 global
    // scale, zero points), from the weight the quantizer reads. GPTQ's pinned result uses the
    // same scales (they are fixed from that weight). Weight quantizer configured only.
    EncodedTensor encode_weight() const;

    // Sees every input (after pre_quant_scale, before input quantization): calibration statistics.
    using InputObserver = std::function<void(const at::Tensor& x)>;
    void set_input_observer(InputObserver observer) { observer_ = std::move(observer); }
    const InputObserver& input_observer() const { return observer_; }

    // Drops the quantized weight (cache or pinned result) once it was written elsewhere (the
    // layer-by-layer PTQ pipeline's streaming checkpoint). The quantizer is spent: a later
    // quantized_weight() is a std::logic_error instead of a silent RTN recomputation.
    void release_weight();
    bool weight_released() const { return released_; }

    // QAT option: zero gradient where the straight-through estimator's input was clipped.
    void set_clip_gradient(bool on) { clip_gradient_ = on; }

    // QAT option for symmetric integer weights: LSQ learnable step sizes (lsq_quantizer.h),
    // initialised from the current weight so the forward is unchanged; the weight quantizer then
    // uses them in every forward (training and evaluation). UserError for other formats.
    // finish_learned_scales pins the weight quantized with the learned steps (what checkpoints
    // store) and drops the learnable scales.
    void enable_learned_scales();
    at::Tensor* learned_scales() { return lsq_ ? &lsq_->scale() : nullptr; }
    void finish_learned_scales();

    // The hooks' work, also usable directly (metrics).
    at::Tensor transform_input(const at::Tensor& x) const;
    at::Tensor transform_weight(const at::Tensor& w);

private:
    LayerQuantPlan plan_;
    bool weight_on_ = false, input_on_ = false;
    float input_amax_ = std::nanf("");
    at::Tensor pre_quant_scale_;
    at::Tensor cached_;                 // quantized weight
    const void* cached_data_ = nullptr;  // what it was computed from
    int64_t cached_version_ = -1;
    float cached_amax_ = std::nanf("");  // the shared amax the cache was computed with
    bool pinned_ = false;
    bool released_ = false;
    std::shared_ptr<const SharedWeightAmax> shared_amax_;
    bool clip_gradient_ = false;
    std::unique_ptr<LsqQuantizer> lsq_;
    InputObserver observer_;
};

}  // namespace ql
