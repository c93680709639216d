// SPDX-License-Identifier: GPL-3.0-or-later
// Where a data-parallel process sits in its group (docs/TRAINING.md "Several processes"): the
// torchrun conventions (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) as plain values, for the
// facade (TrainRequest) and the CLI that reads them from the environment. world_size 1 = one
// process, no process group at all.
#pragma once

#include <cstdint>
#include <string>

namespace ql {

struct DistributedOptions {
    int rank = 0;
    int world_size = 1;
    std::string master_addr = "127.0.0.1";  // rank 0 hosts the rendezvous store there
    int master_port = 29500;
    // Every collective (and the rendezvous) fails after this long without its peers, so a dead
    // or stuck rank ends the others with an error instead of a hang.
    double timeout_seconds = 120;

    bool enabled() const { return world_size > 1; }
    bool is_main() const { return rank == 0; }
};

}  // namespace ql
