// SPDX-License-Identifier: GPL-3.0-or-later
// Force-included into every file of quantlab_engine_plain (engine/CMakeLists.txt), the engine's
// plain-C++ rooms, which compile without LibTorch's include paths, flags and C++ standard so that
// both LibTorch builds share their objects. A LibTorch header reached from one of them -- every
// one of those names namespace c10 -- stops the build here ("attempt to use poisoned c10"),
// instead of compiling against whichever ATen headers the system has: move that file into
// QL_ENGINE_TORCH_FILES_IN_PLAIN_ROOMS.
#pragma once
#pragma GCC poison c10
