// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/kv_cache_calibration.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/calib/calibration_forward.h"
#include "engine/core/errors.h"

namespace ql {

KvCacheScales calibrate_kv_cache_scales(QuantizedModel& q, const std::string& format, const Dataset& calibration,
                                        int64_t batch_size, JobSink& sink, const CancellationToken& cancel) {
    KvCacheScales scales;
    scales.format = format;
    scales.layers = kv_cache_layers(q.model());
    std::map<std::string, float> amax;
    std::vector<LayerQuantizer*> observed;
    for (const KvLayerScales& l : scales.layers) {
        for (const std::string& name : {l.k_proj, l.v_proj}) {
            LayerQuantizer* lq = q.find(name);
            if (!lq) throw UserError("KV-cache calibration: " + name + " is not a quantizable layer");
            float* m = &(amax[name] = 0.0f);
            QuantizableLayer* layer = &lq->layer();
            lq->set_input_observer([m, layer, name](const at::Tensor& x) {
                const at::Tensor y = at::linear(x, layer->weight.detach(), layer->bias.defined() ? layer->bias.detach() : at::Tensor());
                const float v = y.abs().max().item<float>();
                if (!std::isfinite(v)) throw UserError("KV-cache calibration: the output of layer " + name + " holds NaN or Inf");
                *m = std::max(*m, v);
            });
            observed.push_back(lq);
        }
    }
    try {
        run_calibration_forward(q.model(), calibration, batch_size, "calibrate-kv", sink, cancel);
    } catch (...) {
        for (LayerQuantizer* lq : observed) lq->set_input_observer(nullptr);
        throw;
    }
    for (LayerQuantizer* lq : observed) lq->set_input_observer(nullptr);
    for (KvLayerScales& l : scales.layers) {
        l.k_amax = amax.at(l.k_proj);
        l.v_amax = amax.at(l.v_proj);
    }
    return scales;
}

}  // namespace ql
