// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/process_identity.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <sstream>
#include <string>

namespace ql::projects {
namespace {

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

struct ProcStat {
    bool exists = false;
    char state = '?';
    std::int64_t start_ticks = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime(22) ..."; comm may hold spaces and
// parentheses, so fields are counted after the last ')'.
ProcStat read_proc_stat(std::int64_t pid) {
    ProcStat s;
    const std::string line = read_first_line("/proc/" + std::to_string(pid) + "/stat");
    const auto close = line.rfind(')');
    if (close == std::string::npos) return s;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    for (int index = 3; rest >> field; ++index) {
        if (index == 3) s.state = field.empty() ? '?' : field[0];
        if (index == 22) {
            s.start_ticks = std::stoll(field);
            s.exists = true;
            break;
        }
    }
    return s;
}

std::string machine_id() {
    char host[HOST_NAME_MAX + 1] = {};
    gethostname(host, sizeof host - 1);
    char ns[128] = {};
    const ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    return std::string(host) + "|" + read_first_line("/proc/sys/kernel/random/boot_id") + "|" +
           (n > 0 ? std::string(ns, static_cast<std::size_t>(n)) : std::string());
}

}  // namespace

ProcessIdentity current_process() {
    static const ProcessIdentity cached = [] {
        ProcessIdentity id;
        char host[HOST_NAME_MAX + 1] = {};
        gethostname(host, sizeof host - 1);
        id.host = host;
        id.machine = machine_id();
        return id;
    }();
    // PID and start time are read each time: a forked child is another process.
    ProcessIdentity id = cached;
    id.pid = static_cast<std::int64_t>(getpid());
    const ProcStat stat = read_proc_stat(id.pid);
    id.start_ticks = stat.exists ? stat.start_ticks : 0;
    return id;
}

bool writer_alive(const ProcessIdentity& writer, std::optional<double> heartbeat_at, double now, double stale_after_s) {
    if (writer.pid > 0 && !writer.machine.empty() && writer.machine == current_process().machine) {
        const ProcStat stat = read_proc_stat(writer.pid);
        if (stat.exists) {
            // A zombie has exited already; only its parent has not reaped it yet.
            if (stat.state == 'Z' || stat.state == 'X') return false;
            return writer.start_ticks == 0 || stat.start_ticks == writer.start_ticks;
        }
        // No /proc (or no such process): fall back to kill(pid, 0); EPERM means it exists.
        if (writer.pid > INT_MAX) return false;
        return kill(static_cast<pid_t>(writer.pid), 0) == 0 || errno == EPERM;
    }
    if (!heartbeat_at) return false;
    return now - *heartbeat_at < stale_after_s;
}

}  // namespace ql::projects
