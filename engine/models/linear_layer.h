// SPDX-License-Identifier: GPL-3.0-or-later
// LinearLayer lives with the other quantizable layers (Conv2d, Embedding).
#pragma once

#include "engine/models/quantizable_layer.h"
