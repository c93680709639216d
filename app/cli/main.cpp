// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli: the headless front end. Exit codes (ARCHITECTURE.md "CLI contract"): 0 success,
// 1 user error (one line on stderr naming the file and field), 2 internal error.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app/cli/cli_command.h"
#include "app/openmp_wait_policy.h"
#include "engine/core/engine_runtime.h"
#include "engine/core/errors.h"
#include "engine/jobs/job.h"

namespace {

void print_help() {
    std::printf("quantlab-cli %s - QuantLab's headless front end (GPL-3.0-or-later)\n\n",
                ql::quantlab_version().c_str());
    std::printf("usage: quantlab-cli COMMAND [options]\n\ncommands:\n");
    for (const auto& c : ql::cli::all_commands()) std::printf("  %-12s %s\n", c.name.c_str(), c.summary.c_str());
    std::printf("\n'quantlab-cli COMMAND --help' shows a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
    ql::ensure_passive_openmp_wait(argv);
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_help();
        return args.empty() ? 1 : 0;
    }
    if (args[0] == "--version") {
        std::printf("quantlab-cli %s\n", ql::quantlab_version().c_str());
        return 0;
    }
    try {
        for (const auto& c : ql::cli::all_commands()) {
            if (c.name != args[0]) continue;
            const std::vector<std::string> rest(args.begin() + 1, args.end());
            if (!rest.empty() && (rest[0] == "--help" || rest[0] == "-h")) {
                std::printf("usage: %s\n\n%s\n", c.usage.c_str(), c.summary.c_str());
                return 0;
            }
            ql::initialise_engine_runtime();
            return c.run(rest);
        }
        std::fprintf(stderr, "quantlab-cli: error: unknown command '%s' (see quantlab-cli --help)\n", args[0].c_str());
        return 1;
    } catch (const ql::JobCancelled&) {
        std::fprintf(stderr, "quantlab-cli: cancelled\n");
        return 130;  // as a shell reports a process ended by SIGINT
    } catch (const ql::UserError& e) {
        std::fprintf(stderr, "quantlab-cli: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "quantlab-cli: internal error: %s\n", e.what());
        return 2;
    }
}
