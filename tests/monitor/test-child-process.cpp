// The child process `rtf sample -- CMD` runs (exit codes as a shell reports them, start
// failures, signals, no orphan left behind), the monitor's tick callback, and device
// timelines as trace counter events.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "monitor/child-process.h"
#include "monitor/monitor.h"
#include "monitor/trace-counters.h"

using namespace rtf::mon;

TEST(ChildProcess, ExitCodeIsPassedOn) {
    SpawnFailure why;
    auto c = ChildProcess::spawn({"sh", "-c", "exit 7"}, &why);
    ASSERT_TRUE(c) << why.message;
    auto s = c->wait();
    EXPECT_TRUE(s.exited);
    EXPECT_EQ(s.code, 7);
    EXPECT_EQ(s.shell_code(), 7);
    EXPECT_EQ(s.describe(), "exited with code 7");
    EXPECT_EQ(c->poll()->code, 7);  // stays reaped
    auto ok = ChildProcess::spawn({"true"}, &why);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->wait().shell_code(), 0);
}

TEST(ChildProcess, StartFailuresUseTheShellCodes) {
    SpawnFailure why;
    EXPECT_FALSE(ChildProcess::spawn({"rtf-no-such-program-xyz"}, &why));
    EXPECT_EQ(why.shell_code, 127);
    EXPECT_NE(why.message.find("rtf-no-such-program-xyz"), std::string::npos) << why.message;
    // Found but not executable: a folder.
    EXPECT_FALSE(ChildProcess::spawn({"/tmp"}, &why));
    EXPECT_EQ(why.shell_code, 126) << why.message;
    EXPECT_FALSE(ChildProcess::spawn({}, &why));
    EXPECT_EQ(why.shell_code, 127);
}

TEST(ChildProcess, SignalsAndPolling) {
    SpawnFailure why;
    auto c = ChildProcess::spawn({"sleep", "30"}, &why);
    ASSERT_TRUE(c) << why.message;
    EXPECT_FALSE(c->poll());
    EXPECT_FALSE(c->wait_for(20));
    c->send(SIGTERM);
    auto s = c->wait_for(5000);
    ASSERT_TRUE(s);
    EXPECT_FALSE(s->exited);
    EXPECT_EQ(s->signal, SIGTERM);
    EXPECT_EQ(s->shell_code(), 128 + SIGTERM);
    EXPECT_NE(s->describe().find("signal 15"), std::string::npos) << s->describe();
    c->send(SIGKILL);  // after reaping: a no-op, never a reused pid
}

TEST(ChildProcess, DestructorKillsAndReapsARunningChild) {
    pid_t pid = -1;
    {
        SpawnFailure why;
        auto c = ChildProcess::spawn({"sleep", "30"}, &why);
        ASSERT_TRUE(c) << why.message;
        pid = c->pid();
    }
    // Reaped already: waitpid knows no such child.
    EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
}

TEST(ChildProcess, DecodesWaitStatus) {
    auto e = decode_wait_status(3 << 8);  // exit(3)
    EXPECT_TRUE(e.exited);
    EXPECT_EQ(e.shell_code(), 3);
    auto k = decode_wait_status(SIGKILL);
    EXPECT_FALSE(k.exited);
    EXPECT_EQ(k.shell_code(), 137);
    ChildStatus lost;
    lost.lost = true;
    EXPECT_EQ(lost.shell_code(), 255);
}

namespace {
class StepSampler final : public Sampler {
public:
    std::string name() const override { return "step"; }
    std::vector<DeviceReading> sample(double t_ms) override {
        UtilSample s;
        s.t_ms = t_ms;
        s.compute_pct = (n_++ % 2) ? 80.0 : 0.0;
        s.memory_pct = 50.0;
        UtilSample core;
        core.t_ms = t_ms;
        core.compute_pct = 10.0;
        return {{"gpu0", s}, {"cpu0", core}};
    }

private:
    int n_ = 0;
};
}  // namespace

TEST(Monitor, TickCallbackSeesEveryTick) {
    MonitorConfig cfg;
    cfg.interval_ms = 5;
    std::vector<std::unique_ptr<Sampler>> v;
    v.push_back(std::make_unique<StepSampler>());
    std::atomic<double> t{0};
    Monitor m(cfg, [&t] { return t.fetch_add(1.0) + 1.0; }, std::move(v));
    std::atomic<int> ticks{0}, readings{0};
    m.on_tick([&](double, const std::vector<DeviceReading> &r) {
        ++ticks;
        readings += static_cast<int>(r.size());
    });
    m.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto r = m.stop();
    ASSERT_EQ(r.devices.size(), 2u);
    // Every tick (incl. stop()'s tail tick) reaches the callback with both devices.
    EXPECT_EQ(static_cast<size_t>(ticks.load()), r.devices[0].samples.size());
    EXPECT_EQ(readings.load(), 2 * ticks.load());
}

TEST(TraceCounters, OneTrackPerDeviceMicrosecondsAndNoNaN) {
    MonitorReport rep;
    DeviceTimeline gpu{"gpu0", {}, {}};
    UtilSample a;
    a.t_ms = 100.5;
    a.compute_pct = 72;
    a.memory_pct = 30;
    UtilSample b;
    b.t_ms = 101;  // no compute figure: left out
    gpu.samples = {a, b};
    DeviceTimeline core{"cpu3", {}, {}};
    UtilSample c;
    c.t_ms = 100;
    c.compute_pct = 5;
    core.samples = {c};
    DeviceTimeline all{"cpu", {}, {}};
    all.samples = {c};
    rep.devices = {gpu, core, all};
    auto ev = trace_counter_events(rep, 100.0, 7, true);
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0]["name"], "device gpu0");
    EXPECT_EQ(ev[0]["ph"], "C");
    EXPECT_EQ(ev[0]["pid"], 7);
    EXPECT_DOUBLE_EQ(ev[0]["ts"].get<double>(), 500.0);
    EXPECT_DOUBLE_EQ(ev[0]["args"]["compute_pct"].get<double>(), 72.0);
    EXPECT_DOUBLE_EQ(ev[0]["args"]["memory_pct"].get<double>(), 30.0);
    EXPECT_FALSE(ev[1]["args"].contains("memory_pct"));  // CPU: no memory figure
    EXPECT_EQ(ev[1]["name"], "device cpu3");
    auto agg = trace_counter_events(rep, 100.0, 1, false);
    ASSERT_EQ(agg.size(), 2u);  // cpu3 dropped, the "cpu" aggregate kept
    EXPECT_EQ(agg[1]["name"], "device cpu");
    EXPECT_TRUE(is_cpu_core_device("cpu0"));
    EXPECT_TRUE(is_cpu_core_device("cpu127"));
    EXPECT_FALSE(is_cpu_core_device("cpu"));
    EXPECT_FALSE(is_cpu_core_device("cpux"));
    EXPECT_FALSE(is_cpu_core_device("nvidia0"));
}
