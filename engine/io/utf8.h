// SPDX-License-Identifier: GPL-3.0-or-later
// Strict UTF-8 validation, as Rust's core::str::from_utf8 (which the safetensors reference
// applies to headers): no overlong forms, no surrogates, nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ql {

// Index of the first byte that does not start a valid sequence, or nullopt when all is valid.
std::optional<uint64_t> first_invalid_utf8(const char* data, uint64_t size);
inline bool valid_utf8(const std::string& s) { return !first_invalid_utf8(s.data(), s.size()); }

}  // namespace ql
