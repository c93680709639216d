// SPDX-License-Identifier: GPL-3.0-or-later
// Resumable training state (STYLE.md "Checkpoints"): the parameters, AdamW's moments and step
// count, and the trainer's step, in <folder>/checkpoint/ (state.safetensors + trainer_state.json
// written last). Written as checkpoint.partial and swapped in, so a crash leaves the previous
// complete checkpoint; a resume reads only a complete one. The data position needs no state:
// batches are a function of (data, seed, step) (training_batches.h).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/train/adamw.h"

namespace ql {

struct TrainingCheckpointInfo {
    int64_t step = 0;             // steps completed
    std::string config_json;      // the run's configuration, to refuse resuming another run
};

// params: the trained parameters by name (those given to `optimizer`, same order).
void save_training_checkpoint(const std::string& folder, const std::vector<std::pair<std::string, at::Tensor>>& params,
                              const AdamW& optimizer, const TrainingCheckpointInfo& info);

// Restores params and optimizer from <folder>/checkpoint when it is complete; nullopt when there
// is none. UserError naming the file and tensor for a damaged checkpoint, another parameter set,
// or a config_json other than `expected_config_json` (another run's checkpoint).
std::optional<TrainingCheckpointInfo> load_training_checkpoint(const std::string& folder,
                                                               const std::vector<std::pair<std::string, at::Tensor>>& params,
                                                               AdamW& optimizer, const std::string& expected_config_json);

}  // namespace ql
