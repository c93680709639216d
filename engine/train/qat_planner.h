// SPDX-License-Identifier: GPL-3.0-or-later
// The compute-optimal QAT planner (Dremov et al., arXiv 2509.22935; shared/design/QAT.md). Its
// types and functions are declared in the plain-C++ facade engine/api/qat_plan_api.h so the CLI
// and GUI can use them without LibTorch; this header is the engine-side name for them.
#pragma once

#include "engine/api/qat_plan_api.h"
