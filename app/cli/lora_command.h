// SPDX-License-Identifier: GPL-3.0-or-later
// `quantlab-cli train lora|qlora|full MODEL ...` (the LoRA facade, engine/api/lora_api.h); the
// train command hands these modes here.
#pragma once

#include <string>
#include <vector>

namespace ql::cli {

int run_lora_train(const std::vector<std::string>& args);
extern const char* const kLoraTrainUsage;

}  // namespace ql::cli
