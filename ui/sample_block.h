// SPDX-License-Identifier: GPL-3.0-or-later
// Sample blocks for the Format Explorer: small, reproducible inputs that show a format's typical
// behaviour (a normal block), its weak spot (one outlier) and its range limit (tiny values).
#pragma once

#include <QString>

#include <cstdint>
#include <vector>

namespace ql {

enum class SampleKind { RandomNormal, WithOutlier, TinyValues };

// `length` values from a seeded generator (the same seed gives the same block on every
// platform), rounded to 4 significant digits so the table stays readable.
std::vector<float> makeSampleBlock(SampleKind kind, int length, uint32_t seed);

// Numbers separated by spaces, commas, semicolons or newlines ("nan" and "inf" allowed). On
// failure returns an empty vector and sets `error` to a message naming the bad token.
std::vector<float> parseSampleValues(const QString& text, QString* error);

QString sampleKindName(SampleKind kind);

}  // namespace ql
