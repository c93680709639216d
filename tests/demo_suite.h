// SPDX-License-Identifier: GPL-3.0-or-later
// An eval suite the demo can answer (docs/EVAL_SUITES.md): its own problems, in its vocabulary.
#pragma once

namespace ql::test {

// Demo problems (docs/DATA.md: digits least significant first, 3 per operand, 4 per answer):
// 42 + 917 = 959 is "240+719=" -> "9590"; 12 × 3 = 36 is "210*333=" -> "6300" (the multiplier repeated).
inline const char* kDemoSuite =
    R"({"id": "add-1", "category": "add", "prompt": "240+719=", "max_tokens": 6, "check": {"type": "exact", "answer": "9590"}}
{"id": "add-2", "category": "add", "prompt": "100+100=", "max_tokens": 6, "check": {"type": "exact", "answer": "2000"}}
{"id": "sub-1", "category": "sub", "prompt": "999-100=", "max_tokens": 6, "check": {"type": "exact", "answer": "8990"}}
{"id": "mul-1", "category": "mul", "prompt": "210*333=", "max_tokens": 6, "check": {"type": "exact", "answer": "6300"}}
{"id": "mul-2", "category": "mul", "prompt": "500*222=", "max_tokens": 6, "check": {"type": "regex", "pattern": "^0100$"}}
{"id": "add-3", "category": "add", "prompt": "123+000=", "max_tokens": 6, "check": {"type": "exact", "answer": "1230"}}
)";

}  // namespace ql::test
