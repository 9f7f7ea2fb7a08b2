#include "monitor/child-process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

extern char **environ;

namespace rtf::mon {

std::string ChildStatus::describe() const {
    if (lost) return "status lost (the child was reaped elsewhere)";
    if (exited) return "exited with code " + std::to_string(code);
    const char *name = strsignal(signal);
    std::string s = "killed by signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
    if (core_dumped) s += " (core dumped)";
    return s;
}

ChildStatus decode_wait_status(int ws) {
    ChildStatus s;
    if (WIFEXITED(ws)) {
        s.exited = true;
        s.code = WEXITSTATUS(ws);
    } else if (WIFSIGNALED(ws)) {
        s.signal = WTERMSIG(ws);
#ifdef WCOREDUMP
        s.core_dumped = WCOREDUMP(ws);
#endif
    }
    return s;
}

std::unique_ptr<ChildProcess> ChildProcess::spawn(const std::vector<std::string> &argv, SpawnFailure *failure) {
    auto fail = [&](int err, const std::string &what) -> std::unique_ptr<ChildProcess> {
        if (failure) {
            failure->error = err;
            // Shells: 127 "command not found", 126 "found but cannot execute".
            failure->shell_code = (err == ENOENT || err == ENOTDIR || err == 0) ? 127 : 126;
            failure->message = what;
        }
        return nullptr;
    };
    if (argv.empty() || argv[0].empty()) return fail(0, "no command to run");
    std::vector<char *> args;
    args.reserve(argv.size() + 1);
    for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);

    posix_spawnattr_t attr;
    if (int e = posix_spawnattr_init(&attr)) return fail(e, "cannot run '" + argv[0] + "': " + strerror(e));
    sigset_t empty;
    sigemptyset(&empty);
    posix_spawnattr_setsigmask(&attr, &empty);
    // SIGPIPE back to its default in case the caller ignores it: a child writing into a
    // closed pipe should end as it would when run directly.
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int e = posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), environ);
    posix_spawnattr_destroy(&attr);
    if (e != 0) return fail(e, "cannot run '" + argv[0] + "': " + strerror(e));
    return std::unique_ptr<ChildProcess>(new ChildProcess(pid));
}

ChildProcess::~ChildProcess() {
    if (status_) return;
    ::kill(pid_, SIGKILL);
    int ws = 0;
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
}

std::optional<ChildStatus> ChildProcess::poll() {
    if (status_) return status_;
    int ws = 0;
    pid_t r = ::waitpid(pid_, &ws, WNOHANG);
    if (r == pid_) {
        status_ = decode_wait_status(ws);
    } else if (r < 0 && errno == ECHILD) {
        // Someone else reaped it (SIGCHLD set to SIG_IGN reaps automatically).
        status_ = ChildStatus{};
        status_->lost = true;
    }
    return status_;
}

std::optional<ChildStatus> ChildProcess::wait_for(double timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(timeout_ms);
    while (true) {
        if (auto s = poll()) return s;
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

ChildStatus ChildProcess::wait() {
    while (!status_) {
        int ws = 0;
        pid_t r = ::waitpid(pid_, &ws, 0);
        if (r == pid_) {
            status_ = decode_wait_status(ws);
        } else if (r < 0 && errno != EINTR) {
            status_ = ChildStatus{};  // ECHILD: see poll()
            status_->lost = true;
        }
    }
    return *status_;
}

void ChildProcess::send(int sig) {
    if (!status_) ::kill(pid_, sig);
}

}  // namespace rtf::mon
