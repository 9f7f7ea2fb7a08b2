#include "pipeline/cancel.h"

#include <csignal>

#include "core/error.h"

namespace rtf::pipe {

namespace {
std::atomic<CancelToken *> g_token{nullptr};
struct sigaction g_old_int, g_old_term;

extern "C" void on_signal(int sig) {
    CancelToken *t = g_token.load();
    if (t) {
        if (sig == SIGINT && t->cancelled()) {
            std::signal(SIGINT, SIG_DFL);  // second Ctrl-C: default action next time
        }
        t->cancel();
    }
}
}  // namespace

SigintGuard::SigintGuard(CancelToken &token) {
    CancelToken *expected = nullptr;
    if (!g_token.compare_exchange_strong(expected, &token)) throw_runtime("SigintGuard: a guard is already installed");
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: blocking reads return so loops can check the token
    sigaction(SIGINT, &sa, &g_old_int);
    sigaction(SIGTERM, &sa, &g_old_term);
}

SigintGuard::~SigintGuard() {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
    g_token.store(nullptr);
}

}  // namespace rtf::pipe
