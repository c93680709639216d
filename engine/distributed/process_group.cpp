// SPDX-License-Identifier: GPL-3.0-or-later
// The one file that sees c10d and Gloo. The calls used here (TCPStore(host, TCPStoreOptions),
// ProcessGroupGloo(store, rank, size, Options), Options::create(timeout),
// createDeviceForHostname / createDefaultDevice / createDeviceForInterface, allreduce and
// broadcast with their option structs, Work::wait(timeout)) exist with these signatures in
// LibTorch 1.13 (Debian) and 2.x (PyPI 2.15 checked); where 2.x adds parameters (lazyInit,
// useLibUV) they have defaults, and ProcessGroupGloo's base (ProcessGroup in 1.13, Backend in
// 2.x) is not named here, so no TORCH_VERSION_MAJOR guard is needed yet; one goes here, and
// only here, when an API diverges. The PyPI wheel ships no Gloo headers: both builds read
// Debian's libgloo-dev, of which only declarations (gloo::transport::Device) are used.
#include "engine/distributed/process_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/core/errors.h"

namespace ql {
namespace {

std::chrono::milliseconds as_milliseconds(double seconds) {
    return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

bool is_loopback(const std::string& address) {
    return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

std::string this_host() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) return "?";
    return name;
}

// A process that no longer runs: gone, or a zombie its parent (the --nproc launcher, blocked in
// waitpid on another rank) has not reaped yet.
bool process_gone(int64_t pid) {
    if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos || paren + 2 >= text.size()) return false;
    const char state = text[paren + 2];
    return state == 'Z' || state == 'X';
}

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

void check_tensors(const std::vector<at::Tensor>& tensors, const std::string& what) {
    for (const at::Tensor& t : tensors)
        if (!t.defined() || !t.is_contiguous() || !t.device().is_cpu())
            throw std::logic_error("distributed: " + what + ": collectives take defined contiguous CPU tensors");
}

}  // namespace

struct ProcessGroup::State {
    DistributedOptions options;
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
    // Per rank: the host and process id it announced when the group formed, so that a survivor
    // can tell which rank on its host died without the store (rank 0's store dies with rank 0).
    std::vector<std::string> hosts;
    std::vector<int64_t> pids;

    // The ranks on this host whose process is gone, waiting up to 2 s for a dying one to exit
    // (a peer's socket closes while its process is still being torn down).
    std::vector<int> dead_ranks() const {
        const std::string host = this_host();
        std::vector<int> dead;
        for (int attempt = 0; attempt < 20 && dead.empty(); ++attempt) {
            if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
            for (int r = 0; r < options.world_size; ++r)
                if (r != options.rank && hosts[r] == host && process_gone(pids[r])) dead.push_back(r);
        }
        return dead;
    }

    [[noreturn]] void fail(const std::string& what, const std::string& cause) const {
        std::ostringstream m;
        m << "distributed: " << what << " failed on rank " << options.rank << " of " << options.world_size << ": ";
        const std::vector<int> dead = dead_ranks();
        if (!dead.empty()) {
            for (size_t i = 0; i < dead.size(); ++i)
                m << (i ? ", " : "") << "rank " << dead[i] << " (pid " << pids[dead[i]] << ")";
            m << (dead.size() == 1 ? " has" : " have") << " died";
        } else {
            m << "no rank on this host has died (a rank that stopped on an error or Ctrl-C closes its connections "
                 "too); else a rank on another host died, or one stalled past the "
              << options.timeout_seconds << " s timeout";
        }
        m << " (" << cause << ")";
        throw UserError(m.str());
    }

    // c10d's tensor list means one tensor per device (all reduced together), so every tensor is
    // its own collective: all are queued first (Gloo runs them in order on its threads), then
    // waited for.
    template <typename Start>
    void run(const std::string& what, std::vector<at::Tensor>& tensors, Start start) {
        check_tensors(tensors, what);
        try {
            std::vector<c10::intrusive_ptr<c10d::Work>> works;
            for (at::Tensor& t : tensors) {
                std::vector<at::Tensor> one{t};
                works.push_back(start(one));
            }
            for (auto& work : works) work->wait(as_milliseconds(options.timeout_seconds));
        } catch (const UserError&) {
            throw;
        } catch (const std::exception& e) {
            std::string cause = e.what();
            if (const size_t nl = cause.find('\n'); nl != std::string::npos) cause.resize(nl);  // c10's backtrace
            fail(what, cause);
        }
    }
};

ProcessGroup::ProcessGroup(const DistributedOptions& o) : state_(std::make_unique<State>()) {
    if (o.world_size < 2 || o.rank < 0 || o.rank >= o.world_size)
        throw UserError("distributed: rank " + std::to_string(o.rank) + " of world size " + std::to_string(o.world_size) +
                        " is not a process group (RANK must be in [0, WORLD_SIZE), WORLD_SIZE >= 2)");
    if (o.master_port <= 0 || o.master_port > 65535)
        throw UserError("distributed: MASTER_PORT " + std::to_string(o.master_port) + " is not a TCP port");
    if (!(o.timeout_seconds > 0)) throw UserError("distributed: the timeout must be positive");
    State& s = *state_;
    s.options = o;
    const std::string where = o.master_addr + ":" + std::to_string(o.master_port);
    const auto timeout = as_milliseconds(o.timeout_seconds);
    try {
        c10d::TCPStoreOptions so;
        so.port = static_cast<std::uint16_t>(o.master_port);
        so.isServer = o.rank == 0;
        so.numWorkers = static_cast<std::size_t>(o.world_size);
        so.waitWorkers = true;
        so.timeout = timeout;
        s.store = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
    } catch (const std::exception& e) {
        std::string cause = e.what();
        if (const size_t nl = cause.find('\n'); nl != std::string::npos) cause.resize(nl);
        throw UserError("distributed: rank " + std::to_string(o.rank) + " cannot " +
                        (o.rank == 0 ? "host" : "reach") + " the rendezvous store at " + where +
                        " (MASTER_ADDR, MASTER_PORT; all " + std::to_string(o.world_size) + " ranks within " +
                        std::to_string(static_cast<int>(o.timeout_seconds)) + " s): " + cause);
    }
    try {
        auto options = c10d::ProcessGroupGloo::Options::create(timeout);
        // The address this rank's Gloo pairs listen on: the interface GLOO_SOCKET_IFNAME names (as
        // torch.distributed reads it), loopback for a local group, else this host's address.
        if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
            options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
        else if (is_loopback(o.master_addr))
            options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        else
            options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        options->threads = 2;
        s.group = c10::make_intrusive<c10d::ProcessGroupGloo>(s.store, o.rank, o.world_size, options);
        s.store->set("quantlab/rank/" + std::to_string(o.rank), bytes_of(this_host() + " " + std::to_string(getpid())));
        for (int r = 0; r < o.world_size; ++r) {
            const std::vector<uint8_t> v = s.store->get("quantlab/rank/" + std::to_string(r));
            std::istringstream in(std::string(v.begin(), v.end()));
            std::string host;
            int64_t pid = 0;
            in >> host >> pid;
            s.hosts.push_back(host);
            s.pids.push_back(pid);
        }
    } catch (const std::exception& e) {
        std::string cause = e.what();
        if (const size_t nl = cause.find('\n'); nl != std::string::npos) cause.resize(nl);
        throw UserError("distributed: rank " + std::to_string(o.rank) + " could not form the Gloo group of " +
                        std::to_string(o.world_size) + " through " + where + ": " + cause);
    }
}

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return state_->options.rank; }
int ProcessGroup::world_size() const { return state_->options.world_size; }

void ProcessGroup::allreduce_sum(std::vector<at::Tensor>& tensors, const std::string& what) {
    state_->run(what, tensors, [&](std::vector<at::Tensor>& one) {
        c10d::AllreduceOptions o;
        o.reduceOp = c10d::ReduceOp::SUM;
        o.timeout = as_milliseconds(state_->options.timeout_seconds);
        return state_->group->allreduce(one, o);
    });
}

void ProcessGroup::allreduce_max(std::vector<at::Tensor>& tensors, const std::string& what) {
    state_->run(what, tensors, [&](std::vector<at::Tensor>& one) {
        c10d::AllreduceOptions o;
        o.reduceOp = c10d::ReduceOp::MAX;
        o.timeout = as_milliseconds(state_->options.timeout_seconds);
        return state_->group->allreduce(one, o);
    });
}

void ProcessGroup::broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& what) {
    state_->run(what, tensors, [&](std::vector<at::Tensor>& one) {
        c10d::BroadcastOptions o;
        o.rootRank = root;
        o.rootTensor = 0;
        o.timeout = as_milliseconds(state_->options.timeout_seconds);
        return state_->group->broadcast(one, o);
    });
}

}  // namespace ql
