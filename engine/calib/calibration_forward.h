// SPDX-License-Identifier: GPL-3.0-or-later
// One calibration pass: every example of a data set through the model in batches, under
// inference mode, outputs dropped -- what layer observers (LayerQuantizer::set_input_observer)
// see is the point. Reports progress(done examples, total, phase) and checks `cancel` per batch.
// Sentence data (attention_mask) run without padding: batches of sentences of one length.
#pragma once

#include <string>

#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/models/model.h"

namespace ql {

void run_calibration_forward(Model& model, const Dataset& data, int64_t batch_size, const std::string& phase,
                             JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
