#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pipeline/queue.h"

using namespace rtf::pipe;

namespace {
// Counts live instances to catch leaked or double-destroyed items (cf. rigtorp/SPSCQueue's test type).
struct Counted {
    static inline std::atomic<int> live{0};
    int v = 0;
    Counted() { ++live; }
    explicit Counted(int x) : v(x) { ++live; }
    Counted(const Counted &o) : v(o.v) { ++live; }
    Counted(Counted &&o) noexcept : v(o.v) { ++live; }
    Counted &operator=(const Counted &) = default;
    Counted &operator=(Counted &&) noexcept = default;
    ~Counted() { --live; }
};
}  // namespace

TEST(Queue, FifoCloseDrainsThenClosed) {
    BoundedQueue<int> q(4);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(q.put(int(i)), QueueStatus::ok);
    q.close();
    int x = 9;
    EXPECT_EQ(q.put(7), QueueStatus::closed);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(q.get(x), QueueStatus::ok);
        EXPECT_EQ(x, i);
    }
    EXPECT_EQ(q.get(x), QueueStatus::closed);
    auto s = q.stats();
    EXPECT_EQ(s.n_put, 3u);
    EXPECT_EQ(s.n_get, 3u);
    EXPECT_EQ(s.max_depth, 3u);
}

TEST(Queue, RejectedPutDoesNotMoveTheItem) {
    BoundedQueue<std::vector<int>> q(1);
    q.cancel();
    std::vector<int> v{1, 2, 3};
    EXPECT_EQ(q.put(std::move(v)), QueueStatus::cancelled);
    EXPECT_EQ(v.size(), 3u);  // NOLINT(bugprone-use-after-move): the contract says untouched
}

TEST(Queue, PutBlocksWhileFullAndGetUnblocksIt) {
    BoundedQueue<int> q(1);
    ASSERT_EQ(q.put(1), QueueStatus::ok);
    std::atomic<bool> done{false};
    std::thread producer([&] {
        EXPECT_EQ(q.put(2), QueueStatus::ok);
        done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(done.load());
    int x = 0;
    ASSERT_EQ(q.get(x), QueueStatus::ok);
    producer.join();
    EXPECT_TRUE(done.load());
    EXPECT_GT(q.stats().put_wait_ms, 5.0);
    ASSERT_EQ(q.get(x), QueueStatus::ok);
    EXPECT_EQ(x, 2);
}

TEST(Queue, CancelWakesEveryWaiter) {
    BoundedQueue<int> empty(1), full(1);
    ASSERT_EQ(full.put(0), QueueStatus::ok);
    std::vector<std::thread> ts;
    std::atomic<int> cancelled{0};
    for (int i = 0; i < 3; ++i) {
        ts.emplace_back([&] {
            int x;
            if (empty.get(x) == QueueStatus::cancelled) ++cancelled;
        });
        ts.emplace_back([&] {
            if (full.put(1) == QueueStatus::cancelled) ++cancelled;
        });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    empty.cancel();
    full.cancel();
    for (auto &t : ts) t.join();
    EXPECT_EQ(cancelled.load(), 6);
    int x;
    EXPECT_EQ(full.get(x), QueueStatus::cancelled);  // cancel drops the rest
}

TEST(Queue, WaitClosed) {
    BoundedQueue<int> q(0);  // unbounded
    std::atomic<bool> ok{false};
    std::thread t([&] { ok = q.wait_closed(); });
    for (int i = 0; i < 100; ++i) ASSERT_EQ(q.put(int(i)), QueueStatus::ok);
    q.close();
    t.join();
    EXPECT_TRUE(ok.load());
    EXPECT_EQ(q.size(), 100u);
    BoundedQueue<int> c(0);
    std::thread t2([&] { ok = c.wait_closed(); });
    c.cancel();
    t2.join();
    EXPECT_FALSE(ok.load());
}

TEST(Queue, ManyProducersConsumersNoLossNoLeak) {
    {
        BoundedQueue<Counted> q(3);
        constexpr int kPer = 2000, kProd = 3, kCons = 3;
        std::atomic<long> sum{0};
        std::atomic<int> got{0};
        std::vector<std::thread> ts;
        for (int p = 0; p < kProd; ++p)
            ts.emplace_back([&, p] {
                for (int i = 0; i < kPer; ++i) ASSERT_EQ(q.put(Counted(p * kPer + i)), QueueStatus::ok);
            });
        for (int c = 0; c < kCons; ++c)
            ts.emplace_back([&] {
                Counted x;
                while (q.get(x) == QueueStatus::ok) {
                    sum += x.v;
                    ++got;
                }
            });
        for (int p = 0; p < kProd; ++p) ts[static_cast<size_t>(p)].join();
        q.close();
        for (size_t i = kProd; i < ts.size(); ++i) ts[i].join();
        const long n = kPer * kProd;
        EXPECT_EQ(got.load(), n);
        EXPECT_EQ(sum.load(), n * (n - 1) / 2);
        EXPECT_LE(q.stats().max_depth, 3u);
    }
    EXPECT_EQ(Counted::live.load(), 0);
}
