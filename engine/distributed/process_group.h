// SPDX-License-Identifier: GPL-3.0-or-later
// A group of data-parallel processes over PyTorch c10d's Gloo backend (CPU), rendezvous through a
// TCPStore that rank 0 hosts at MASTER_ADDR:MASTER_PORT. The plain interface the trainer uses;
// process_group.cpp is the one file that sees c10d (whose API differs between LibTorch 1.13 and
// 2.x) and Gloo.
// Collectives work in place on dense contiguous CPU tensors of one dtype, block until done and
// give up after the group's timeout. A failed collective (a peer died, was killed or stalled past
// the timeout) throws UserError naming the operation and the ranks that did not answer.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/core/distributed_options.h"

namespace ql {

class ProcessGroup {
public:
    // Joins the group described by `options` (enabled() must hold): rank 0 starts the store;
    // everyone waits up to the timeout for all world_size ranks. UserError naming the address
    // when the group cannot form (a port in use, a rank that never came).
    explicit ProcessGroup(const DistributedOptions& options);
    ~ProcessGroup();
    ProcessGroup(const ProcessGroup&) = delete;
    ProcessGroup& operator=(const ProcessGroup&) = delete;

    int rank() const;
    int world_size() const;

    // Element-wise sum / max over the ranks, in place; `what` names the operation in errors
    // ("all-reduce of gradients at step 12").
    void allreduce_sum(std::vector<at::Tensor>& tensors, const std::string& what);
    void allreduce_max(std::vector<at::Tensor>& tensors, const std::string& what);
    // Rank `root`'s values everywhere, in place.
    void broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& what);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace ql
