// SPDX-License-Identifier: GPL-3.0-or-later
// The batches a training run reads, a pure function of (data, seed, step) so that a resumed run
// sees exactly the batches the uninterrupted one would have (docs/TRAINING.md):
// - synthetic answer tasks ("synthetic:arith", "synthetic:arith:+" ...): fresh training
//   problems every step, problems step*B .. step*B + B - 1 of the seeded training stream (as the
//   demo trainer reads them);
// - "synthetic:random-tokens": fresh uniform random sequences every step (seed mixed with step);
//   for a sentence encoder, random sentences between its special tokens;
// - files (text, token files): loaded once (training split) and read in a seeded permutation
//   that changes every epoch.
#pragma once

#include <cstdint>
#include <string>

#include "engine/data/dataset.h"

namespace ql {

class TrainingBatches {
public:
    // UserError for data the model cannot take (as load_dataset), or a file with fewer examples
    // than one batch. sequence_length 0: the data's default (random tokens: min(positions, 64)).
    TrainingBatches(const std::string& spec, const DataContext& context, int64_t batch_size, uint64_t seed,
                    int64_t sequence_length = 0);

    Dataset batch(int64_t step) const;
    int64_t batch_size() const { return batch_size_; }
    const std::string& spec() const { return spec_; }

private:
    enum class Source { Synthetic, RandomTokens, File };
    Source source_ = Source::File;
    std::string spec_;
    std::vector<SyntheticDomain> domains_;
    int64_t batch_size_ = 0, length_ = 0, vocab_ = 0;
    uint64_t seed_ = 0;
    Dataset file_;  // Source::File
    DataContext sentences_;  // random tokens for an encoder: its tokenizer's special tokens
};

}  // namespace ql
