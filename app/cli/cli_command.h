// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli subcommands. Each lives in its own file and registers here; main.cpp dispatches.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ql::cli {

struct Command {
    std::string name;     // "fakequant"
    std::string usage;    // "quantlab-cli fakequant --format NAME --in X.npy --out Y.npy [...]"
    std::string summary;  // one line for `quantlab-cli --help`
    // Runs with the arguments after the command name; returns the exit code. Throws UserError
    // for bad input (main prints it and exits 1).
    std::function<int(const std::vector<std::string>&)> run;
};

// Factories, one per command file.
Command formats_command();
Command fakequant_command();
Command project_command();
Command inspect_command();
Command eval_command();
Command generate_command();
Command evalsuite_command();
Command convert_command();
Command tokenize_command();
Command logits_command();
Command ptq_command();
Command sensitivity_command();
Command stats_command();
Command train_command();
Command demo_command();
Command plan_command();
Command export_command();
Command imatrix_command();
Command divergence_command();
Command doctor_command();
Command experiment_command();
Command embed_command();
Command whatif_command();
Command recipe_command();
Command lora_command();

// Every command, in help order.
const std::vector<Command>& all_commands();

}  // namespace ql::cli
