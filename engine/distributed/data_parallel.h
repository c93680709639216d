// SPDX-License-Identifier: GPL-3.0-or-later
// Data parallelism over a ProcessGroup (docs/TRAINING.md "Several processes"): every rank holds
// the whole model, trains on its shard of each global batch, and after the backward pass the
// gradients are averaged over the ranks, so every rank takes the same optimizer step. With the
// losses weighted by each shard's share of the scored positions (quant_trainer.cpp), N ranks with
// B/N examples each compute the gradient of one process with batch B, to float summation order.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/distributed/process_group.h"

namespace ql {

class DataParallel {
public:
    // `group` must outlive this object. bucket_bytes: gradients are flattened into buckets of at
    // most this many bytes (a tensor larger than a bucket is its own), one all-reduce per bucket
    // (PyTorch DDP's default bucket_cap_mb is 25).
    explicit DataParallel(ProcessGroup& group, int64_t bucket_bytes = 25ll << 20);

    int rank() const { return group_.rank(); }
    int world_size() const { return group_.world_size(); }
    bool is_main() const { return group_.rank() == 0; }

    // Rows [rank * B / N, (rank + 1) * B / N) of a global batch of B examples (every tensor of
    // the batch with B rows). UserError when B is not a multiple of the world size.
    Dataset shard(const Dataset& global) const;

    // Rank 0's values of `tensors` (parameters, optimizer moments) everywhere, in place.
    void broadcast_from_main(const std::vector<at::Tensor>& tensors, const std::string& what);

    // Averages the gradients of `params` over the ranks, in buckets. A parameter with a gradient
    // on some rank but not on another gets a zero gradient where it had none (so that every rank
    // steps it); one without a gradient anywhere keeps none (AdamW then skips it, as in one
    // process). Returns the seconds spent in the collectives.
    double average_gradients(const std::vector<at::Tensor>& params, int64_t step);

    // Element-wise sums over the ranks (float64), for losses, counts and metrics.
    std::vector<double> sum(const std::vector<double>& values, const std::string& what);

private:
    ProcessGroup& group_;
    int64_t bucket_bytes_;
};

}  // namespace ql
