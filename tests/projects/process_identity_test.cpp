// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/process_identity.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "projects/wall_clock.h"

namespace ql::projects {
namespace {

TEST(ProcessIdentity, ThisProcessIsAlive) {
    const ProcessIdentity me = current_process();
    EXPECT_EQ(me.pid, getpid());
    EXPECT_FALSE(me.machine.empty());
    EXPECT_TRUE(writer_alive(me, std::nullopt, unix_time_now(), 60.0));
}

TEST(ProcessIdentity, AnExitedProcessIsDeadEvenBeforeItIsReaped) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(0);
    ProcessIdentity writer = current_process();
    writer.pid = child;
    writer.start_ticks = 0;
    // A zombie until waitpid: still "dead" for our purposes. waitid(WNOWAIT) returns once the
    // child has exited and leaves it unreaped, however long the machine takes to get there.
    siginfo_t info{};
    ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
    EXPECT_FALSE(writer_alive(writer, std::nullopt, unix_time_now(), 60.0));
    waitpid(child, nullptr, 0);
    EXPECT_FALSE(writer_alive(writer, std::nullopt, unix_time_now(), 60.0));
}

TEST(ProcessIdentity, AReusedPidWithAnotherStartTimeIsNotTheWriter) {
    ProcessIdentity writer = current_process();
    writer.start_ticks += 12345;
    EXPECT_FALSE(writer_alive(writer, std::nullopt, unix_time_now(), 60.0));
}

TEST(ProcessIdentity, AnotherMachineIsJudgedByItsHeartbeat) {
    ProcessIdentity remote;
    remote.pid = 1;
    remote.machine = "elsewhere|boot|ns";
    const double now = unix_time_now();
    EXPECT_TRUE(writer_alive(remote, now - 5, now, 60.0));
    EXPECT_FALSE(writer_alive(remote, now - 61, now, 60.0));
    EXPECT_FALSE(writer_alive(remote, std::nullopt, now, 60.0));
}

}  // namespace
}  // namespace ql::projects
