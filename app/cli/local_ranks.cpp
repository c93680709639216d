// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/local_ranks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "app/cli/child_process.h"
#include "engine/core/errors.h"
#include "engine/core/loopback_port.h"

namespace ql::cli {
namespace {

bool parse_int(const char* text, long long& out) {
    if (!text || !*text) return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtoll(text, &end, 10);
    return errno == 0 && end && *end == '\0';
}

}  // namespace

DistributedOptions distributed_from_environment() {
    DistributedOptions o;
    const char* world = std::getenv("WORLD_SIZE");
    if (!world) return o;
    long long value = 0;
    if (!parse_int(world, value) || value < 1 || value > 4096)
        throw UserError(std::string("distributed: WORLD_SIZE '") + world + "' is not a number of processes (1..4096)");
    o.world_size = static_cast<int>(value);
    if (o.world_size == 1) return o;
    const char* rank = std::getenv("RANK");
    if (!parse_int(rank, value) || value < 0 || value >= o.world_size)
        throw UserError(std::string("distributed: RANK '") + (rank ? rank : "") + "' must be in [0, WORLD_SIZE " +
                        std::to_string(o.world_size) + ")");
    o.rank = static_cast<int>(value);
    if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) o.master_addr = addr;
    if (const char* port = std::getenv("MASTER_PORT")) {
        if (!parse_int(port, value) || value < 1 || value > 65535)
            throw UserError(std::string("distributed: MASTER_PORT '") + port + "' is not a TCP port");
        o.master_port = static_cast<int>(value);
    }
    return o;
}

LocalRanks::LocalRanks(const std::vector<std::string>& command, const DistributedOptions& o) {
    for (int r = 1; r < o.world_size; ++r) {
        const std::vector<std::string> env = {"RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r),
                                              "WORLD_SIZE=" + std::to_string(o.world_size), "MASTER_ADDR=" + o.master_addr,
                                              "MASTER_PORT=" + std::to_string(o.master_port)};
        pids_.push_back(spawn_self(command, env));
    }
}

LocalRanks::~LocalRanks() {
    if (!finished_) finish(30);
}

bool LocalRanks::finish(double grace_seconds) {
    finished_ = true;
    bool all_ok = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
    for (size_t i = 0; i < pids_.size(); ++i) {
        const pid_t pid = pids_[i];
        int status = 0;
        pid_t done = 0;
        while ((done = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ChildExit e;
        if (done == 0) {
            std::fprintf(stderr, "train: rank %zu (pid %d) still runs %.0f s after rank 0 ended; stopping it\n", i + 1,
                         static_cast<int>(pid), grace_seconds);
            kill(pid, SIGTERM);
            e = wait_child(pid);
        } else if (done > 0) {
            e = child_exit(status);
        }
        if (e.code != 0) {
            all_ok = false;
            std::fprintf(stderr, "train: rank %zu (pid %d): %s\n", i + 1, static_cast<int>(pid),
                         e.describe().c_str());
        }
    }
    return all_ok;
}

void start_training_ranks(const ArgParser& p, const std::vector<std::string>& args, int64_t batch_size, const std::string& device,
                          DistributedOptions& distributed, int64_t& threads, std::optional<LocalRanks>& ranks) {
    const int64_t nproc = p.integer("--nproc", 1);
    if (nproc < 1 || nproc > 256) throw UserError("train: --nproc must be in 1..256");
    distributed = distributed_from_environment();
    if (nproc > 1 && distributed.enabled())
        throw UserError("train: --nproc starts its own ranks; this process already is rank " + std::to_string(distributed.rank) +
                        " of WORLD_SIZE " + std::to_string(distributed.world_size) + " (drop --nproc, or unset WORLD_SIZE)");
    if (nproc > 1 && device != "cpu")
        throw UserError("train: --nproc with --device " + device + " is not supported (the ranks reduce CPU tensors)");
    if (nproc > 1) {
        if (batch_size % nproc != 0)
            throw UserError("train: --batch-size " + std::to_string(batch_size) + " (the global batch) does not split over " +
                            std::to_string(nproc) + " ranks; use a multiple of " + std::to_string(nproc));
        distributed.world_size = static_cast<int>(nproc);
        distributed.rank = 0;
        distributed.master_addr = "127.0.0.1";
        distributed.master_port = free_loopback_port();
    }
    distributed.timeout_seconds = p.number("--dist-timeout", distributed.timeout_seconds);
    if (!(distributed.timeout_seconds > 0) || !std::isfinite(distributed.timeout_seconds))
        throw UserError("train: --dist-timeout must be a positive number of seconds");
    if (nproc == 1) return;
    if (threads == 0) threads = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()) / nproc);
    // The children: this command line without --nproc (and --json, --project: rank 0's), with
    // the thread count fixed.
    std::vector<std::string> child = {"train"};
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--nproc" || args[i] == "--threads" || args[i] == "--project") {
            ++i;
            continue;
        }
        if (args[i] == "--json") continue;
        child.push_back(args[i]);
    }
    child.push_back("--threads");
    child.push_back(std::to_string(threads));
    ranks.emplace(child, distributed);
}

}  // namespace ql::cli
