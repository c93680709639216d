// SPDX-License-Identifier: GPL-3.0-or-later
// --device cpu|cuda|cuda:N, the same on every command that runs a model (docs/CLI.md "Devices").
#pragma once

#include <string>

#include "app/cli/arg_parser.h"

namespace ql::cli {

// The --device value as the requests take it, canonical ("cuda" -> "cuda:0"); "cpu" when absent.
// UserError "--device: expected cpu, cuda or cuda:N, got 'x'" for anything else. Whether this
// build and machine have that GPU is the engine's check, when the command runs.
std::string device_option(const ArgParser& p);

}  // namespace ql::cli
