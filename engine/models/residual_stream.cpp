// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/residual_stream.h"

namespace ql {

const char* residual_part_name(ResidualStage::Part part) {
    switch (part) {
        case ResidualStage::Part::Embeddings: return "embeddings";
        case ResidualStage::Part::Attention: return "attention";
        case ResidualStage::Part::Mlp: return "mlp";
    }
    return "?";
}

}  // namespace ql
