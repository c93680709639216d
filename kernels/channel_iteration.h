// SPDX-License-Identifier: GPL-3.0-or-later
// Walks a ChannelLayout buffer in parallel as runs of elements that share one channel.
#pragma once

#include "kernels/parallel.h"
#include "kernels/tensor_layout.h"

namespace ql::kernels {

// run(channel, offset, length) for each run of `inner` elements of one channel, or, when
// inner == 1, rows(offset, row_count) for runs of whole [channels] rows (channel = position).
template <class Run, class Rows>
void for_each_channel_run(const ChannelLayout& L, const Run& run, const Rows& rows) {
    const int64_t grain = int64_t{1} << 15;
    if (L.inner == 1 && L.channels > 1) {
        parallel_ranges(L.outer, std::max<int64_t>(1, grain / L.channels), 1,
                        [&](int64_t o0, int64_t o1) { rows(o0 * L.channels, o1 - o0); });
        return;
    }
    if (L.outer * L.channels == 1) {
        parallel_ranges(L.inner, grain, 64, [&](int64_t b, int64_t e) { run(int64_t{0}, b, e - b); });
        return;
    }
    parallel_ranges(L.outer * L.channels, std::max<int64_t>(1, grain / L.inner), 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) run(r % L.channels, r * L.inner, L.inner);
    });
}

// fn(i, param(c)) for every element i of L and its channel c; param(c) is evaluated once per run
// of a channel (per element where channels alternate, inner == 1). Capture by value ([=]) in
// both: a byte store through a pointer captured by reference could overwrite the closures, so
// the loop would reload them on every element.
template <class Param, class Fn>
void for_each_channel_element(const ChannelLayout& L, const Param& param, const Fn& fn) {
    for_each_channel_run(
        L,
        [&](int64_t c, int64_t off, int64_t n) {
            const auto p = param(c);
            for (int64_t i = off; i < off + n; ++i) fn(i, p);
        },
        [&](int64_t off, int64_t rows) {
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < L.channels; ++c) fn(off + r * L.channels + c, param(c));
        });
}

}  // namespace ql::kernels
