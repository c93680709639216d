// SPDX-License-Identifier: GPL-3.0-or-later
// Importance matrices: the engine behind `quantlab-cli imatrix` and the Layer Inspector's
// importance tab (docs/CLI.md "imatrix"). Collects one from calibration data as llama-imatrix
// does (engine/calib/importance_collector.h), merges files, writes either llama.cpp format
// (engine/io/imatrix_file.h) and computes the per-tensor statistics
// (engine/stats/importance_statistics.h). Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/jobs/job.h"
#include "engine/core/importance_matrix.h"

namespace ql {

struct ImatrixRequest {
    std::string model;            // MODEL (HF folder, GGUF file, checkpoint, "demo"); "" = merge only
    std::string calibration;      // data spec (docs/DATA.md); required with a model
    int64_t samples = 0;          // sequences (0 = 128)
    int64_t sequence_length = 0;  // tokens per sequence = the chunk size (0 = the data's default)
    int64_t batch_size = 0;       // sequences per forward (0 = 16)
    uint64_t seed = 0;
    std::string token_dtype;      // raw .bin token files
    bool process_output = false;  // also collect output.weight (llama-imatrix --process-output)
    std::vector<std::string> in_files;  // matrices to merge (with the collected one, if any)
    std::string out;              // the file to write ("" = do not write)
    std::string format = "gguf";  // gguf | dat
    bool force = false;
    int top_k = 8;                // statistics: top columns per tensor
    std::string device = "cpu";   // where the model and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
};

struct ImatrixReport {
    std::string out, format;
    int64_t entries = 0, chunk_count = 0, chunk_size = 0;
    std::vector<std::string> datasets;
    std::vector<ImportanceStatistics> statistics;  // per entry, name order
    double seconds = 0;
};

// Progress phases "load", "imatrix" (batches), "write". UserError for bad input (no model and no
// in_files, unknown format, existing out without force, files that do not merge).
ImatrixReport run_imatrix(const ImatrixRequest& request, JobSink& sink, const CancellationToken& cancel);

// The statistics of an imatrix file (either format).
ImatrixReport imatrix_file_statistics(const std::string& path, int top_k = 8);

}  // namespace ql
