// SPDX-License-Identifier: GPL-3.0-or-later
// Children of this executable: `experiment run --workers N` and `train --nproc N` start copies
// of quantlab-cli with other arguments (and, for train, the torchrun environment variables).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ql::cli {

// Starts /proc/self/exe with argv[1..] = args and this process's environment plus
// extra_environment ("NAME=value", replacing variables of the same name); stdout goes to
// /dev/null when drop_stdout, stderr is shared. Returns the pid; UserError when it cannot start.
pid_t spawn_self(const std::vector<std::string>& args, const std::vector<std::string>& extra_environment = {},
                 bool drop_stdout = true);

struct ChildExit {
    int code = 0;    // exit status, or 128 + signal when killed
    int signal = 0;  // the signal that killed it, 0 when it exited
    std::string describe() const;  // "exit 1", "killed by signal 9 (Killed)"
};

// Blocks until pid ends.
ChildExit wait_child(pid_t pid);
// The ChildExit of a waitpid status.
ChildExit child_exit(int wait_status);

}  // namespace ql::cli
