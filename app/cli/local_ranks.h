// SPDX-License-Identifier: GPL-3.0-or-later
// Data-parallel ranks for `train` (docs/TRAINING.md "Several processes"): the torchrun
// environment a launcher gives each rank, and `--nproc N`'s own launcher, which runs rank 0 in
// this process and starts ranks 1..N-1 as children of the same command line.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/arg_parser.h"
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

// The --nproc N and --dist-timeout S options of a training command (`train qat|qad`, `train
// lora|qlora|full`; `p` registered both): `distributed` becomes the group this process joins (a
// launcher's environment, or rank 0 of N local ranks, started here into `ranks`), `threads` the
// intra-op threads per process (unset: the cores divided by N). The children run `train` with
// `args` (the command's arguments after "train") without --nproc, --threads, --project and
// --json. UserError (prefixed "train: ") for a bad value, --nproc inside a launched group, a
// device other than the CPU with --nproc, a global batch of `batch_size` that does not split.
void start_training_ranks(const ArgParser& p, const std::vector<std::string>& args, int64_t batch_size, const std::string& device,
                          DistributedOptions& distributed, int64_t& threads, std::optional<LocalRanks>& ranks);

}  // namespace ql::cli
