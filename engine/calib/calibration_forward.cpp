// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/calibration_forward.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "engine/eval/evaluator.h"
#include "engine/models/model_device.h"

namespace ql {
namespace {

// Sentences run in batches of one length each, without padding: observers then see real tokens
// only (a padded batch would add the [PAD] positions' activations to amax, histograms, GPTQ
// Hessians and AWQ statistics).
void run_sentences_unpadded(Model& model, const Dataset& data, int64_t bs, const std::string& phase, JobSink& sink,
                            const CancellationToken& cancel) {
    const at::Tensor lengths_t = data.attention_mask.ne(0).sum(1).to(at::kLong).contiguous();
    const int64_t n = data.size();
    const int64_t* lengths = lengths_t.data_ptr<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; });
    int64_t done = 0;
    for (size_t i = 0; i < order.size();) {
        cancel.throw_if_cancelled();
        const int64_t length = lengths[order[i]];
        size_t j = i;
        while (j < order.size() && lengths[order[j]] == length && static_cast<int64_t>(j - i) < bs) ++j;
        if (length > 0) {
            const at::Tensor rows = at::tensor(std::vector<int64_t>(order.begin() + static_cast<std::ptrdiff_t>(i),
                                                                    order.begin() + static_cast<std::ptrdiff_t>(j)),
                                               at::kLong);
            model.forward(on_model_device(model, data.inputs.index_select(0, rows).slice(1, 0, length)));
        }
        done += static_cast<int64_t>(j - i);
        sink.progress(done, n, phase);
        i = j;
    }
}

}  // namespace

void run_calibration_forward(Model& model, const Dataset& data, int64_t batch_size, const std::string& phase,
                             JobSink& sink, const CancellationToken& cancel) {
    c10::InferenceMode inference;
    const int64_t n = data.size();
    const int64_t bs = std::max<int64_t>(1, batch_size);
    sink.progress(0, n, phase);
    if (data.attention_mask.defined()) {
        run_sentences_unpadded(model, data, bs, phase, sink, cancel);
        return;
    }
    for (int64_t begin = 0; begin < n; begin += bs) {
        cancel.throw_if_cancelled();
        const int64_t count = std::min(bs, n - begin);
        model.forward(on_model_device(model, model_input(model, data.inputs.slice(0, begin, begin + count))));
        sink.progress(begin + count, n, phase);
    }
}

}  // namespace ql
