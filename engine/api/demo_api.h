// SPDX-License-Identifier: GPL-3.0-or-later
// The built-in demo model (ARCHITECTURE.md "Built-in demo"): the demo decoder trained by
// QuantLab on the synthetic arithmetic tasks, an HF folder (config.json, model.safetensors,
// quantlab.json). One ships in resources/demo (what MODEL = "demo" opens); build_demo trains a
// new one (by default into the cache, engine/core/demo_folder.h). Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/demo_folder.h"
#include "engine/jobs/job.h"

namespace ql {

struct DemoRequest {
    std::string out_dir;     // "" = retrained_demo_dir()
    bool force = false;      // retrain even when a complete model is there
    std::string command;     // the command line to record ("" = the quantlab-cli equivalent)
    int64_t steps = 0;       // 0 = the full schedule (docs/DATA.md); tests train a few steps
    uint64_t seed = 0;       // model initialisation and training problems
    int threads = 0;         // intra-op threads while training; 0 = the default (docs/BENCHMARKS.md)
    std::string device = "cpu";  // where the training steps run: cpu | cuda | cuda:N (engine/core/compute_device.h)
};

struct DemoReport {
    std::string out_dir;
    bool cached = false;          // nothing trained: the folder already held a complete model
    bool shipped = false;         // the shipped demo (resources/demo)
    int64_t steps = 0;
    int64_t batch_size = 0;
    int threads = 0;
    double train_seconds = 0;     // training steps only
    double seconds = 0;           // everything (training, final evaluation, saving)
    int64_t parameter_count = 0;
    double exact_match = 0;       // held-out validation problems, all operations
    std::vector<std::pair<std::string, double>> domain_exact_match;  // "+", "-", "*"
    int64_t validation_examples = 0;
    std::string command;          // the training command quantlab.json records ("" for older records)
    std::string trained_on;       // "CPU model, N hardware threads, LibTorch V, BLAS config" ("" when unrecorded)
};

// Trains (unless cached) and saves the demo. Reports progress ("train", "eval", "save"),
// metrics (train/loss, train/lr, train/grad_norm, eval/exact_match, eval/exact_match/+ ...) and
// the saved folder as artifact "model". Cancellation leaves any previous complete model intact.
// quantlab.json records the command, seed, schedule, the machine and build it ran on
// (engine/core/engine_runtime.h) and the size and SHA-256 of every other file in the folder
// (docs/DATA.md "The demo model").
DemoReport build_demo(const DemoRequest& request, JobSink& sink, const CancellationToken& cancel);

// Reads the training record of a complete demo folder (quantlab.json); UserError otherwise.
DemoReport read_demo_record(const std::string& folder);

// Checks the files a demo record lists ("files": size and SHA-256) against the folder: UserError
// naming the file and both hashes (or sizes) on a mismatch, or a listed file that is missing.
// Records without a file list (demos trained before they were added) pass. Reads every listed
// file: milliseconds for the demo, but not for the GUI thread.
void verify_demo_files(const std::string& folder);

// The shipped demo (resources/demo): its record, after verify_demo_files. UserError when the
// folder is missing or damaged.
DemoReport shipped_demo_report();

}  // namespace ql
