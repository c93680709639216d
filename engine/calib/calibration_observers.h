// SPDX-License-Identifier: GPL-3.0-or-later
// Statistics of the inputs of chosen layers while calibration batches run: installs an input
// observer on each LayerQuantizer feeding one InputStatistics, and removes the observers when
// destroyed. Non-finite inputs stop calibration with a UserError naming the layer.
#pragma once

#include <map>
#include <set>
#include <string>

#include "engine/calib/input_statistics.h"
#include "engine/data/dataset.h"
#include "engine/quant/quantized_model.h"

namespace ql {

class CalibrationObservers {
public:
    // `options` apply to every layer in `layers`; with `histograms`, layers whose static input
    // quantizer uses a histogram calibrator (percentile, MSE, entropy) also collect one.
    // expected_rows is taken from `data` so samples spread over the whole pass.
    CalibrationObservers(QuantizedModel& quantized, const std::set<std::string>& layers, InputStatisticsOptions options,
                         const Dataset& data, bool histograms);
    ~CalibrationObservers();
    CalibrationObservers(const CalibrationObservers&) = delete;
    CalibrationObservers& operator=(const CalibrationObservers&) = delete;

    InputStatistics& at(const std::string& layer) { return stats_.at(layer); }

private:
    QuantizedModel& quantized_;
    std::map<std::string, InputStatistics> stats_;
};

}  // namespace ql
