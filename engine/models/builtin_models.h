// SPDX-License-Identifier: GPL-3.0-or-later
// The built-in models' configs (create_model(config, seed) builds them). Facade-safe.
#pragma once

#include <cstdint>

#include "engine/models/model_config.h"

namespace ql {

// The demo decoder trained on the built-in arithmetic task: a plain Llama (architecture and
// model_type "llama", name "quantlab-demo", so exports load in transformers / llama.cpp):
// hidden 192, 4 layers, 6 query heads of 32 sharing 2 kv heads (GQA), SwiGLU 512, RMSNorm,
// RoPE theta 10000, untied lm_head, 128 positions; ~1.6 M parameters with 48 tokens.
ModelConfig demo_decoder_config(int64_t vocab_size = 48);

// MLP 784-256-256-10 (fc1, fc2, fc3), name "quantlab-mlp".
ModelConfig mlp_config(int64_t input_size = 784, int64_t hidden = 256, int64_t hidden_layers = 2,
                       int64_t classes = 10);

// CNN for 1x28x28 images, 10 classes (conv1 16 ch, conv2 32 ch, fc), name "quantlab-cnn".
ModelConfig cnn_config(int64_t channels = 1, int64_t image_size = 28, int64_t width = 16, int64_t classes = 10);

// GPT-2 small's shape (12 layers, 768 wide, 12 heads, 50257 tokens, 1024 positions): benchmarks.
ModelConfig gpt2_small_config();

}  // namespace ql
