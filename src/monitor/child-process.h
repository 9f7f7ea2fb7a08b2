#pragma once
// rtf::mon::ChildProcess — a command run as a child process while rtfkit samples the
// machine (`rtf sample -- COMMAND ARGS...`).
//
//   mon::SpawnFailure why;
//   auto child = mon::ChildProcess::spawn({"sh", "-c", "exit 7"}, &why);
//   if (!child) { print(why.message); return why.shell_code; }   // 127 / 126
//   while (!child->poll()) do_something();                        // or child->wait()
//   child->status()->shell_code();                                // 7
//
// The child is started with posix_spawnp: the program is searched on PATH as a shell would,
// and the child inherits stdin, stdout, stderr (its output passes straight through), the
// environment, the working directory and the process group (so a terminal's Ctrl-C reaches
// it as it reaches rtf). Its signal mask is emptied (the caller may block signals in its
// own threads); handlers the caller installed are reset to the default by exec itself.
//
// Exit status, as a shell reports it (shell_code()): the child's exit code; 128 + N when
// signal N ended it; a program that cannot be started gives 127 (not found) or 126 (found
// but not executable / no permission), like env(1), timeout(1) and nice(1).
//
// Thread-safety: one owner thread per ChildProcess. spawn() is safe while other threads run
// (posix_spawnp runs no code of ours between creating the child and exec).
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rtf::mon {

struct ChildStatus {
    bool exited = false;       // ended by exit() / return from main
    int code = 0;              // its exit code when `exited`
    int signal = 0;            // the signal that ended it otherwise
    bool core_dumped = false;
    bool lost = false;         // reaped by someone else (SIGCHLD ignored): status unknown
    // The shell convention: `code`, or 128 + `signal`; 255 when the status was lost.
    int shell_code() const { return lost ? 255 : exited ? code : 128 + signal; }
    // "exited with code 7", "killed by signal 9 (Killed)", "... (core dumped)", "status lost ...".
    std::string describe() const;
};

// Decodes a waitpid() status (WIFEXITED / WIFSIGNALED).
ChildStatus decode_wait_status(int wait_status);

struct SpawnFailure {
    int error = 0;        // errno from posix_spawnp
    int shell_code = 0;   // 127 when not found, 126 otherwise
    std::string message;  // "cannot run 'foo': No such file or directory"
};

class ChildProcess {
public:
    // Starts argv[0] with argv. nullptr and *failure filled in when it cannot be started;
    // an empty argv or an empty program name gives shell code 127 too.
    static std::unique_ptr<ChildProcess> spawn(const std::vector<std::string> &argv, SpawnFailure *failure);

    // A child still running is sent SIGKILL and reaped: no orphan, no zombie.
    ~ChildProcess();
    ChildProcess(const ChildProcess &) = delete;
    ChildProcess &operator=(const ChildProcess &) = delete;

    pid_t pid() const { return pid_; }
    // Non-blocking: the status once it has ended (reaps it), nullopt while it runs.
    std::optional<ChildStatus> poll();
    // Waits up to timeout_ms (polling every few ms); nullopt when it still runs then.
    std::optional<ChildStatus> wait_for(double timeout_ms);
    // Blocks until it ends.
    ChildStatus wait();
    // Sends `sig` while it has not been reaped (no-op afterwards, so never a reused pid).
    void send(int sig);
    const std::optional<ChildStatus> &status() const { return status_; }

private:
    explicit ChildProcess(pid_t pid) : pid_(pid) {}
    pid_t pid_;
    std::optional<ChildStatus> status_;
};

}  // namespace rtf::mon
