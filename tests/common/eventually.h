#pragma once
// eventually(pred): polls pred every millisecond until it holds or `limit` passes; true iff it
// held. The bounded form of `while (!pred()) sleep(1ms)`: a state that never comes (a waiter
// that never queues, a callback that never fires) fails the test within the limit, saying
// what it waited for, instead of hanging it until ctest's timeout.
#include <chrono>
#include <thread>

namespace rtf::test {

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= end) return pred();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

}  // namespace rtf::test
