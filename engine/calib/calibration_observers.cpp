// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/calibration_observers.h"

#include <cmath>

#include "engine/core/errors.h"

namespace ql {

CalibrationObservers::CalibrationObservers(QuantizedModel& q, const std::set<std::string>& layers,
                                           InputStatisticsOptions options, const Dataset& data, bool histograms)
    : quantized_(q) {
    // Input rows the layers will see: images, tokens, or the real tokens of padded sentences.
    const int64_t rows = data.kind == Dataset::Kind::Images ? data.size()
                         : data.attention_mask.defined()   ? data.attention_mask.ne(0).sum().item<int64_t>()
                                                           : data.inputs.numel();
    for (const auto& l : q.layers()) {
        if (!layers.count(l->name())) continue;
        InputStatisticsOptions o = options;
        o.expected_rows = rows;
        o.histogram = histograms && l->input_needs_amax() && l->plan().input.calibrator != "max";
        InputStatistics* s =
            &stats_.emplace(l->name(), InputStatistics(l->layer().kind() == LayerKind::Conv2d, o)).first->second;
        const std::string name = l->name();
        l->set_input_observer([s, name](const at::Tensor& x) {
            s->add(x);
            if (!std::isfinite(s->amax())) throw UserError("calibration: the input of layer " + name + " holds NaN or Inf");
        });
    }
}

CalibrationObservers::~CalibrationObservers() {
    for (const auto& l : quantized_.layers()) l->set_input_observer(nullptr);
}

}  // namespace ql
