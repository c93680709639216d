// SPDX-License-Identifier: GPL-3.0-or-later
// Data-parallel ranks for `train` (docs/TRAINING.md "Several processes"): the torchrun
// environment a launcher gives each rank, and `--nproc N`'s own launcher, which runs rank 0 in
// this process and starts ranks 1..N-1 as children of the same command line.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "engine/core/distributed_options.h"

namespace ql::cli {

// RANK, WORLD_SIZE, MASTER_ADDR (default 127.0.0.1), MASTER_PORT (default 29500) from the
// environment; world_size 1 when WORLD_SIZE is unset. UserError naming the variable when one is
// malformed or RANK is missing.
DistributedOptions distributed_from_environment();

class LocalRanks {
public:
    // Starts ranks 1..world_size-1: `args` (the command's arguments without --nproc) with RANK,
    // LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set; their stdout is dropped (rank 0
    // reports), stderr kept. `options` describes rank 0 (this process).
    LocalRanks(const std::vector<std::string>& command, const DistributedOptions& options);
    // Waits for the children (see finish); a child still running after a grace period is ended
    // with SIGTERM.
    ~LocalRanks();
    LocalRanks(const LocalRanks&) = delete;
    LocalRanks& operator=(const LocalRanks&) = delete;

    // Waits for every child, up to grace_seconds (then SIGTERM); prints one line to stderr for each
    // that failed ("train: rank 1 (pid 123) was killed by signal 9 (Killed)"). Returns true when
    // all exited 0.
    bool finish(double grace_seconds);

private:
    std::vector<pid_t> pids_;
    bool finished_ = false;
};

}  // namespace ql::cli
