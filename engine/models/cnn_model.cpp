// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/cnn_model.h"

#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/relu.h>

#include "engine/core/errors.h"

namespace ql {

CnnModel::CnnModel(ModelConfig config) : Model(std::move(config)) {
    const ModelConfig& c = config_;
    const int64_t ch = c.hidden_size, side = c.image_size / 4;
    add_conv(conv1_, "conv1", c.image_channels, ch, 3, 1, 1);
    add_conv(conv2_, "conv2", ch, 2 * ch, 3, 1, 1);
    add_linear(fc_, "fc", 2 * ch * side * side, c.num_classes, true, Init::FanInUniform);
}

at::Tensor CnnModel::forward(const at::Tensor& images) {
    const ModelConfig& c = config_;
    const std::string what = c.name.empty() ? "cnn" : c.name;
    if (!images.is_floating_point() || images.dim() != 4 || images.size(1) != c.image_channels ||
        images.size(2) != c.image_size || images.size(3) != c.image_size)
        throw UserError(what + ": images must be float [batch, " + std::to_string(c.image_channels) + ", " +
                        std::to_string(c.image_size) + ", " + std::to_string(c.image_size) + "]");
    at::Tensor x = images.to(at::kFloat);
    x = at::max_pool2d(at::relu(conv1_.forward(x)), {2, 2});
    x = at::max_pool2d(at::relu(conv2_.forward(x)), {2, 2});
    return fc_.forward(x.flatten(1));
}

}  // namespace ql
