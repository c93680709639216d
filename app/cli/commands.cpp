// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/cli_command.h"

namespace ql::cli {

const std::vector<Command>& all_commands() {
    static const std::vector<Command> commands = {
        formats_command(),
        fakequant_command(),
        inspect_command(),
        convert_command(),
        tokenize_command(),
        logits_command(),
        eval_command(),
        generate_command(),
        evalsuite_command(),
        embed_command(),
        ptq_command(),
        sensitivity_command(),
        stats_command(),
        train_command(),
        demo_command(),
        plan_command(),
        export_command(),
        imatrix_command(),
        divergence_command(),
        doctor_command(),
        project_command(),
        experiment_command(),
        whatif_command(),
        recipe_command(),
        lora_command(),
    };
    return commands;
}

}  // namespace ql::cli
