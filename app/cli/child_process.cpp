// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/core/errors.h"

extern char** environ;

namespace ql::cli {

pid_t spawn_self(const std::vector<std::string>& args, const std::vector<std::string>& extra_environment, bool drop_stdout) {
    std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    std::vector<std::string> argv_text = {exe};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The environment: ours minus the names extra_environment sets, then those.
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        const std::string name = entry.substr(0, entry.find('='));
        bool replaced = false;
        for (const std::string& x : extra_environment) replaced = replaced || x.substr(0, x.find('=')) == name;
        if (!replaced) env_text.push_back(entry);
    }
    env_text.insert(env_text.end(), extra_environment.begin(), extra_environment.end());
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (drop_stdout) posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw UserError("cannot start " + exe + ": " + std::strerror(rc));
    return pid;
}

std::string ChildExit::describe() const {
    if (signal) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    return "exit " + std::to_string(code);
}

ChildExit child_exit(int status) {
    ChildExit e;
    if (WIFSIGNALED(status)) {
        e.signal = WTERMSIG(status);
        e.code = 128 + e.signal;
    } else {
        e.code = WEXITSTATUS(status);
    }
    return e;
}

ChildExit wait_child(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return ChildExit{1, 0};
    return child_exit(status);
}

}  // namespace ql::cli
