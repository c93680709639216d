// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/calibration_forward.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "engine/eval/evaluator.h"

namespace ql {

void run_calibration_forward(Model& model, const Dataset& data, int64_t batch_size, const std::string& phase,
                             JobSink& sink, const CancellationToken& cancel) {
    c10::InferenceMode inference;
    const int64_t n = data.size();
    const int64_t bs = std::max<int64_t>(1, batch_size);
    sink.progress(0, n, phase);
    for (int64_t begin = 0; begin < n; begin += bs) {
        cancel.throw_if_cancelled();
        const int64_t count = std::min(bs, n - begin);
        model.forward(model_input(model, data.inputs.slice(0, begin, begin + count)));
        sink.progress(begin + count, n, phase);
    }
}

}  // namespace ql
