// SPDX-License-Identifier: GPL-3.0-or-later
// Who is writing a run, recorded so that a later open can tell a live writer from a dead one:
// a run left 'running' by a process that no longer exists is marked 'interrupted'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ql::projects {

struct ProcessIdentity {
    std::int64_t pid = 0;
    // The process's start time in clock ticks since boot (/proc/PID/stat field 22), so a PID
    // reused by another process after the writer died is not mistaken for the writer; 0 if unknown.
    std::int64_t start_ticks = 0;
    std::string host;     // gethostname(), for people
    // hostname, boot id and PID namespace: the PID means something only where all three match.
    std::string machine;
};

// This process.
ProcessIdentity current_process();

// Whether the writer that recorded `writer` (and last wrote `heartbeat_at`, Unix seconds) may
// still be running. On this machine (same `machine`) the answer comes from the PID and its start
// time; elsewhere from the heartbeat: a writer updates it at every flush (at least every
// second), so one silent for `stale_after_s` seconds is taken as dead.
bool writer_alive(const ProcessIdentity& writer, std::optional<double> heartbeat_at, double now, double stale_after_s);

}  // namespace ql::projects
