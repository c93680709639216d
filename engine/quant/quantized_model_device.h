// SPDX-License-Identifier: GPL-3.0-or-later
// Moving a quantized model between devices (--device; engine/models/model_device.h moves a plain
// model): its parameters and the state its layer quantizers hold.
#pragma once

#include <c10/core/Device.h>

namespace ql {

class QuantizedModel;

// Moves the model's parameters to `device` (move_model) and the quantizer state with them:
// pre_quant_scales, and pinned quantized weights (GPTQ results, checkpoint values), which are
// keyed on their weight's storage and so are pinned again after the move. A no-op when the model
// is there already.
void move_quantized_model(QuantizedModel& quantized, at::Device device);

}  // namespace ql
