// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/training_batches.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <numeric>

#include "engine/core/errors.h"

namespace ql {

TrainingBatches::TrainingBatches(const std::string& spec, const DataContext& context, int64_t batch_size, uint64_t seed,
                                 int64_t sequence_length)
    : spec_(spec), batch_size_(batch_size), seed_(seed) {
    if (batch_size <= 0) throw UserError("training: the batch size must be positive");
    // load_dataset validates the data against the model in every case (vocabulary, positions).
    DataOptions o;
    o.split = DataSplit::Train;
    o.seed = seed;
    o.sequence_length = sequence_length;
    if (is_synthetic_spec(spec)) {
        domains_ = parse_synthetic_spec(spec);
        o.samples = batch_size;
        const Dataset probe = load_dataset(spec, o, context);
        source_ = domains_.front() == SyntheticDomain::RandomTokens ? Source::RandomTokens : Source::Synthetic;
        length_ = probe.inputs.size(1);
        vocab_ = context.vocab_size;
        if (source_ == Source::RandomTokens && context.encode_sentence) sentences_ = context;
        return;
    }
    file_ = load_dataset(spec, o, context);
    if (file_.size() < batch_size)
        throw UserError("training data '" + spec + "' holds " + std::to_string(file_.size()) +
                        " examples in its training split, fewer than one batch of " + std::to_string(batch_size));
}

Dataset TrainingBatches::batch(int64_t step) const {
    const int64_t first = step * batch_size_;
    switch (source_) {
        case Source::Synthetic:
            return make_synthetic_dataset(domains_, DataSplit::Train, seed_, batch_size_, first);
        case Source::RandomTokens:
            if (sentences_.encode_sentence)
                return make_random_sentence_dataset(sentences_, length_, DataSplit::Train,
                                                    mix64(seed_ ^ mix64(uint64_t(step) + 1)), batch_size_);
            return make_random_token_dataset(vocab_, length_, DataSplit::Train, mix64(seed_ ^ mix64(uint64_t(step) + 1)),
                                             batch_size_);
        case Source::File: break;
    }
    // Epoch e reads a Fisher-Yates permutation seeded by (seed, e); a batch never spans epochs
    // (the last partial batch of an epoch is skipped).
    const int64_t n = file_.size();
    const int64_t per_epoch = n / batch_size_;
    const int64_t epoch = step / per_epoch, index = step % per_epoch;
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    uint64_t state = mix64(seed_ * 0x9E3779B97F4A7C15ull + uint64_t(epoch) + 1);
    for (int64_t i = n - 1; i > 0; --i) {
        state = mix64(state);
        std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(state % uint64_t(i + 1))]);
    }
    const at::Tensor rows = at::tensor(std::vector<int64_t>(order.begin() + index * batch_size_,
                                                            order.begin() + (index + 1) * batch_size_),
                                       at::kLong);
    return select_rows(file_, rows);
}

}  // namespace ql
