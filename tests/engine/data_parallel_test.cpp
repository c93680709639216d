// SPDX-License-Identifier: GPL-3.0-or-later
// DataParallel over a real Gloo group of two ranks on loopback, as two threads of this process:
// shards, bucketed gradient averaging and the gradient layout agreement. (Whole training runs on
// two processes, a killed rank and resume: tests/app/cli_train_distributed_test.cpp.)
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "engine/core/errors.h"
#include "engine/core/loopback_port.h"
#include "engine/distributed/data_parallel.h"

namespace ql {
namespace {

// Runs body(rank, DataParallel) on two ranks (threads) of one group; rethrows a rank's failure.
void on_two_ranks(int64_t bucket_bytes, const std::function<void(int, DataParallel&)>& body) {
    const int port = free_loopback_port();
    std::exception_ptr failure[2];
    auto rank = [&](int r) {
        try {
            DistributedOptions o;
            o.rank = r;
            o.world_size = 2;
            o.master_port = port;
            o.timeout_seconds = 30;
            ProcessGroup group(o);
            DataParallel dp(group, bucket_bytes);
            body(r, dp);
        } catch (...) {
            failure[r] = std::current_exception();
        }
    };
    std::thread one(rank, 1);
    rank(0);
    one.join();
    for (auto& f : failure)
        if (f) std::rethrow_exception(f);
}

TEST(DataParallel, GradientsAreAveragedInBucketsAndLayoutsAgree) {
    std::vector<at::Tensor> results[2];
    // 64-byte buckets: the 5x5 gradient (100 bytes) is a bucket of its own, the small ones share.
    on_two_ranks(64, [&](int r, DataParallel& dp) {
        const double v = r == 0 ? 1.0 : 3.0;
        std::vector<at::Tensor> params = {at::zeros({5, 5}), at::zeros({3}), at::zeros({2}), at::zeros({4}),
                                          at::zeros({2, 2}, at::kDouble)};
        for (auto& p : params) p.set_requires_grad(true);
        params[0].mutable_grad() = at::full({5, 5}, v);
        params[1].mutable_grad() = at::arange(3, at::kFloat) * v;
        if (r == 1) params[2].mutable_grad() = at::full({2}, 8.0);  // a gradient on rank 1 only
        // params[3]: no gradient on either rank
        params[4].mutable_grad() = at::full({2, 2}, v, at::kDouble);
        EXPECT_GE(dp.average_gradients(params, 7), 0.0);
        for (auto& p : params) results[r].push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
    });
    for (int r = 0; r < 2; ++r) {
        const auto& g = results[r];
        EXPECT_TRUE(at::equal(g[0], at::full({5, 5}, 2.0))) << r;
        EXPECT_TRUE(at::equal(g[1], at::arange(3, at::kFloat) * 2.0)) << r;
        EXPECT_TRUE(at::equal(g[2], at::full({2}, 4.0))) << r;  // (0 + 8) / 2 on both ranks
        EXPECT_FALSE(g[3].defined()) << r;                      // AdamW skips it, as in one process
        EXPECT_TRUE(at::equal(g[4], at::full({2, 2}, 2.0, at::kDouble))) << r;
    }
}

TEST(DataParallel, EachRankTakesItsRowsOfTheGlobalBatchAndSumsAgree) {
    Dataset global;
    global.inputs = at::arange(8 * 3, at::kLong).reshape({8, 3});
    global.targets = global.inputs + 100;
    Dataset shards[2];
    std::vector<double> sums[2];
    at::Tensor broadcast[2];
    on_two_ranks(1 << 20, [&](int r, DataParallel& dp) {
        shards[r] = dp.shard(global);
        sums[r] = dp.sum({1.0 + r, 0.5}, "test sum");
        std::vector<at::Tensor> t = {at::full({3}, static_cast<float>(10 + r))};
        dp.broadcast_from_main(t, "test broadcast");
        broadcast[r] = t[0];
        Dataset odd = global;
        odd.inputs = global.inputs.narrow(0, 0, 7);
        EXPECT_THROW(dp.shard(odd), UserError);
    });
    for (int r = 0; r < 2; ++r) {
        EXPECT_TRUE(at::equal(shards[r].inputs, global.inputs.narrow(0, 4 * r, 4))) << r;
        EXPECT_TRUE(at::equal(shards[r].targets, global.targets.narrow(0, 4 * r, 4))) << r;
        EXPECT_EQ(sums[r], (std::vector<double>{3.0, 1.0})) << r;
        EXPECT_TRUE(at::equal(broadcast[r], at::full({3}, 10.0f))) << r;
    }
}

TEST(DataParallel, AGroupThatCannotFormNamesTheStoreAddress) {
    DistributedOptions o;
    o.rank = 1;
    o.world_size = 2;
    o.master_port = 9;  // nobody hosts a store there
    o.timeout_seconds = 1;
    try {
        ProcessGroup group(o);
        FAIL() << "a group without rank 0 formed";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 cannot reach the rendezvous store at 127.0.0.1:9"), std::string::npos)
            << e.what();
    }
    o.world_size = 1;
    EXPECT_THROW(ProcessGroup{o}, UserError);
}

}  // namespace
}  // namespace ql
