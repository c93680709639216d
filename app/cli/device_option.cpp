// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/device_option.h"

#include "engine/core/compute_device.h"

namespace ql::cli {

std::string device_option(const ArgParser& p) { return parse_compute_device(p.value("--device").value_or("cpu")).text(); }

}  // namespace ql::cli
