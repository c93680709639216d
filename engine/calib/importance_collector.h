// SPDX-License-Identifier: GPL-3.0-or-later
// Collecting an importance matrix (importance_matrix.h) from calibration data, as llama-imatrix
// does (tools/imatrix/imatrix.cpp collect_imatrix): every Linear layer's float input x (before
// any input quantizer; llama.cpp sees the F32 activations its matmuls quantize internally),
// flattened to rows of `in` values, adds x_j^2 to sum_sq[j] and x_j to sum[j] (float64
// accumulators, stored as float32 like llama.cpp's) and its row count to counts[0]. As in
// llama.cpp, a forward with fewer than 16 rows is ignored ("why are small batches ignored
// (<16 tokens)?"), the output projection (lm_head -> output.weight) only with process_output,
// and non-finite inputs stop the collection with a UserError naming the layer.
// Names: GGUF names ("blk.0.attn_q.weight") for llama / qwen2 / gpt2 models, "<layer>.weight"
// for the others (llama.cpp collects only "blk." matrices: other Linears of those
// architectures are skipped there too).
#pragma once

#include <string>

#include "engine/core/importance_matrix.h"
#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/models/model.h"

namespace ql {

struct ImportanceCollection {
    int64_t batch_size = 16;      // examples per forward
    bool process_output = false;  // llama-imatrix --process-output
    std::string dataset_name;     // recorded in imatrix.datasets
};

// The entry name of a Linear layer, or "" when llama-imatrix would not collect it.
std::string importance_entry_name(const ModelConfig& config, const std::string& layer, bool process_output);

// Runs `data` through `model` (progress phase "imatrix", cancellable per batch). chunk_size is
// the data's sequence length, chunk_count the number of sequences.
ImportanceMatrix collect_importance(Model& model, const Dataset& data, const ImportanceCollection& options, JobSink& sink,
                                    const CancellationToken& cancel);

}  // namespace ql
