// SPDX-License-Identifier: GPL-3.0-or-later
// The built-in synthetic tasks (docs/DATA.md): multi-digit addition, subtraction and
// multiplication, copy and reverse, each a separately selectable domain, over a fixed character
// vocabulary. Problems are a pure function of (domain, split, seed, index), and the split of a
// problem is a hash of its operands alone, so no seed ever puts a validation problem into the
// training set. Plain C++ (no LibTorch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

// The character vocabulary shared by every synthetic task and the demo model (48 ids; 44-47 are
// reserved and never generated, so embeddings are a multiple of 16 rows).
namespace synthetic_vocab {
constexpr int64_t kPad = 0;
constexpr int64_t kBos = 1;
constexpr int64_t kEos = 2;
constexpr int64_t kSep = 3;    // '|' between a copy/reverse prompt and its answer
constexpr int64_t kEquals = 4; // '='
constexpr int64_t kPlus = 5;
constexpr int64_t kMinus = 6;
constexpr int64_t kTimes = 7;
constexpr int64_t kDigit0 = 8;   // '0'..'9' = 8..17
constexpr int64_t kLetterA = 18; // 'a'..'z' = 18..43
constexpr int64_t kSize = 48;

// "<pad>", "<bos>", "<eos>", "|", "=", "+", "-", "*", "0".."9", "a".."z", "<reserved44>"...
std::string token_text(int64_t id);
// Readable text for a token sequence; special tokens as <bos>, <eos>, <pad>.
std::string decode(const std::vector<int64_t>& ids);
// Characters to ids: digits, letters a-z, + - * = |; whitespace (newlines included) is skipped.
// Any other character throws UserError naming `source` and the character's line and column.
std::vector<int64_t> encode(const std::string& text, const std::string& source);
}  // namespace synthetic_vocab

enum class SyntheticDomain { Add, Sub, Mul, Copy, Reverse, RandomTokens };

// "+", "-", "*", "copy", "reverse", "random-tokens": the names used in specs and in `domains`.
std::string domain_name(SyntheticDomain d);

enum class DataSplit { Train, Validation, All };
std::string split_name(DataSplit s);

// One problem as a token sequence: <bos> prompt answer <eos>. Answer tokens (with the final
// <eos>) are tokens[answer_begin, tokens.size()).
struct SyntheticExample {
    SyntheticDomain domain = SyntheticDomain::Add;
    std::vector<int64_t> tokens;
    int64_t answer_begin = 0;
};

// The exact task definition (docs/DATA.md "Synthetic tasks"). Arithmetic problems share one
// layout, every number written least significant digit first and zero-padded: 3 digits per
// operand, 4 answer digits:   <bos> a0 a1 a2 op b0 b1 b2 = c0 c1 c2 c3 <eos>   (14 tokens)
//   +  a, b in [0, 999]; c = a + b.          42 + 917 = 959:  <bos> 2 4 0 + 7 1 9 = 9 5 9 0 <eos>
//   -  a, b in [0, 999] with a >= b; c = a - b.
//   *  a in [0, 999], b in [0, 9] written in all three digit places (a*7 is a0 a1 a2 * 7 7 7);
//      c = a * b.
//   copy     a string of 4-8 letters a-z, '|', the same string.
//   reverse  a string of 4-8 letters a-z, '|', the string reversed.
// Split: a problem is in validation iff hash(domain, operands) % 10 == 0 (about 10 % of each
// problem space), independent of the seed. Train/Validation draw problems with a seeded
// generator and reject those of the other split; All draws without rejection.
SyntheticExample generate_example(SyntheticDomain domain, DataSplit split, uint64_t seed, uint64_t index);

// The split a problem belongs to (the hash above); `operands` as generated (a, b) or the letters.
bool is_validation_problem(SyntheticDomain domain, const std::vector<int64_t>& operands);

// Longest sequence (tokens, with <bos> and <eos>) a domain produces.
int64_t max_example_length(SyntheticDomain domain);

// Readable form of an example, digits as stored (least significant first): "240+719=9590".
std::string render_example(const SyntheticExample& e);

// Parses a built-in spec: "synthetic:arith" (+, -, *), "synthetic:arith:+" / ":-" / ":*" (one
// domain; several may be joined, "synthetic:arith:+-"), "synthetic:copy", "synthetic:reverse",
// "synthetic:strings" (copy and reverse), "synthetic:all" (every answer domain),
// "synthetic:random-tokens". Unknown specs throw UserError naming the spec.
std::vector<SyntheticDomain> parse_synthetic_spec(const std::string& spec);
bool is_synthetic_spec(const std::string& spec);

// splitmix64: the generator's mixing function (public for tests and the random-token stream).
uint64_t mix64(uint64_t x);

}  // namespace ql
