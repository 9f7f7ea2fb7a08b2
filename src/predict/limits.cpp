#include "predict/limits.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "machine/backend-devices.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-backend.h"

namespace rtf::predict {

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A vector of 4 doubles through the compiler's vector extension, so the read loop is not
// limited by scalar adds at -O2 (GCC and Clang both support it; 2 SSE ops without AVX).
typedef double v4d __attribute__((vector_size(32), aligned(8)));

double read_slice(const double *p, size_t n) {
    v4d a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v4d x0, x1, x2, x3;
        std::memcpy(&x0, p + i, sizeof x0);
        std::memcpy(&x1, p + i + 4, sizeof x1);
        std::memcpy(&x2, p + i + 8, sizeof x2);
        std::memcpy(&x3, p + i + 12, sizeof x3);
        a0 += x0;
        a1 += x1;
        a2 += x2;
        a3 += x3;
    }
    v4d s = a0 + a1 + a2 + a3;
    double r = s[0] + s[1] + s[2] + s[3];
    for (; i < n; ++i) r += p[i];
    return r;
}

struct Buffers {
    std::unique_ptr<double[]> a, b, c;
};

}  // namespace

BandwidthResult measure_bandwidth(size_t array_bytes, int n_threads, int reps) {
    if (n_threads < 1 || n_threads > 4096) throw_usage("--threads: " + std::to_string(n_threads) + " is outside 1 .. 4096");
    if (array_bytes < (1u << 20)) throw_usage("--bw-mib: arrays must be at least 1 MiB");
    if (reps < 1) throw_usage("--reps: must be >= 1");
    const size_t n = array_bytes / sizeof(double);
    Buffers buf;
    buf.a.reset(new double[n]);
    buf.b.reset(new double[n]);
    buf.c.reset(new double[n]);
    const int T = n_threads;
    auto lo = [&](int t) { return n * static_cast<size_t>(t) / static_cast<size_t>(T); };
    std::atomic<double> sink{0};
    double best_read = 1e30, best_triad = 1e30, best_copy = 1e30;
    // Phases: 0 init (first touch), then per rep: 1 read, 2 triad, 3 copy. Each phase is
    // bracketed by two barrier points; the barrier's completion step (run once, when the
    // last thread arrives and before any is released) stamps the time, so a main thread
    // descheduled after the start barrier cannot shorten the measured interval.
    Clock::time_point stamps[2];
    int stamp_idx = 0;
    auto on_phase = [&]() noexcept {
        stamps[stamp_idx] = Clock::now();
        stamp_idx ^= 1;
    };
    std::barrier sync(T + 1, on_phase);
    int phase = 0;
    std::vector<std::thread> th;
    for (int t = 0; t < T; ++t) {
        th.emplace_back([&, t] {
            const size_t b = lo(t), e = lo(t + 1);
            while (true) {
                sync.arrive_and_wait();  // start
                int ph = phase;
                if (ph < 0) break;
                if (ph == 0) {
                    for (size_t i = b; i < e; ++i) {
                        buf.a[i] = 1.0;
                        buf.b[i] = 2.0;
                        buf.c[i] = 0.5;
                    }
                } else if (ph == 1) {
                    double s = read_slice(buf.a.get() + b, e - b);
                    sink.store(s, std::memory_order_relaxed);
                } else if (ph == 2) {
                    double *a = buf.a.get(), *bb = buf.b.get(), *c = buf.c.get();
                    const double k = 3.0;
                    for (size_t i = b; i < e; ++i) a[i] = bb[i] + k * c[i];
                } else if (ph == 3) {
                    std::memcpy(buf.c.get() + b, buf.b.get() + b, (e - b) * sizeof(double));
                }
                sync.arrive_and_wait();  // done
            }
        });
    }
    auto run_phase = [&](int ph) {
        phase = ph;
        sync.arrive_and_wait();  // start: stamps[0]
        sync.arrive_and_wait();  // done: stamps[1]
        return secs(stamps[0], stamps[1]);
    };
    run_phase(0);
    for (int r = 0; r < reps + 1; ++r) {  // first repetition is a warm-up (page faults, TLB)
        double tr = run_phase(1), tt = run_phase(2), tc = run_phase(3);
        if (r == 0) continue;
        best_read = std::min(best_read, tr);
        best_triad = std::min(best_triad, tt);
        best_copy = std::min(best_copy, tc);
    }
    phase = -1;
    sync.arrive_and_wait();
    for (auto &t : th) t.join();
    (void)sink.load();
    BandwidthResult r;
    r.n_threads = T;
    r.array_bytes = n * sizeof(double);
    r.reps = reps;
    const double bytes = static_cast<double>(r.array_bytes);
    r.read_gib_s = bytes / best_read / kGiB;
    r.triad_gib_s = 3.0 * bytes / best_triad / kGiB;
    r.copy_gib_s = bytes / best_copy / kGiB;
    return r;
}

namespace {

struct GgmlRun {
    ggml_context *ctx = nullptr;
    ggml_backend_t backend = nullptr;
    ggml_backend_buffer_t buffer = nullptr;
    ~GgmlRun() {
        if (buffer) ggml_backend_buffer_free(buffer);
        if (backend) ggml_backend_free(backend);
        if (ctx) ggml_free(ctx);
    }
};

ggml_backend_dev_t find_dev(const std::string &device) {
    find_backend_device(device);  // Usage error listing the names
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (device == ggml_backend_dev_name(d)) return d;
    }
    throw_usage("--device: '" + device + "' not found");
}

void fill(ggml_tensor *t, std::mt19937 &rng) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int64_t n = ggml_nelements(t);
    std::vector<float> f(static_cast<size_t>(n));
    for (auto &x : f) x = u(rng);
    if (t->type == GGML_TYPE_F32) {
        ggml_backend_tensor_set(t, f.data(), 0, ggml_nbytes(t));
    } else {
        std::vector<ggml_fp16_t> h(static_cast<size_t>(n));
        ggml_fp32_to_fp16_row(f.data(), h.data(), n);
        ggml_backend_tensor_set(t, h.data(), 0, ggml_nbytes(t));
    }
}

MatmulResult run_mul_mat(const std::string &device, ggml_type wtype, int n_threads, int m, int n, int k, int reps) {
    if (m < 1 || n < 1 || k < 1) throw_usage("--matmul-size: must be >= 1");
    if (reps < 1) throw_usage("--reps: must be >= 1");
    ggml_backend_dev_t dev = find_dev(device);
    GgmlRun g;
    ggml_init_params ip{ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    g.ctx = ggml_init(ip);
    if (!g.ctx) throw_setup("ggml_init failed");
    ggml_tensor *a = ggml_new_tensor_2d(g.ctx, wtype, k, m);
    ggml_tensor *b = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, k, n);
    ggml_tensor *c = ggml_mul_mat(g.ctx, a, b);
    ggml_cgraph *gf = ggml_new_graph(g.ctx);
    ggml_build_forward_expand(gf, c);
    const bool is_cpu = ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
    g.backend = t2w::make_backend(dev, n_threads);  // the engines' own backend set-up: the floor cannot drift from it
    g.buffer = ggml_backend_alloc_ctx_tensors(g.ctx, g.backend);
    if (!g.buffer) throw_setup("cannot allocate " + std::to_string(ggml_nbytes(a) + ggml_nbytes(b)) + " bytes on " + device);
    std::mt19937 rng(1234);
    fill(a, rng);
    fill(b, rng);
    std::vector<double> times;
    for (int r = 0; r < reps + 1; ++r) {
        auto t0 = Clock::now();
        if (ggml_backend_graph_compute(g.backend, gf) != GGML_STATUS_SUCCESS)
            throw_setup("ggml mul_mat failed on " + device);
        ggml_backend_synchronize(g.backend);
        double s = secs(t0, Clock::now());
        if (r > 0) times.push_back(s);
    }
    std::sort(times.begin(), times.end());
    double t = times[times.size() / 2];
    MatmulResult res;
    res.device = device;
    res.type = ggml_type_name(wtype);
    res.n_threads = is_cpu ? n_threads : 0;
    res.m = m;
    res.n = n;
    res.k = k;
    res.ms = t * 1e3;
    res.gflops = 2.0 * m * n * k / t / 1e9;
    res.gib_s = static_cast<double>(ggml_nbytes(a)) / t / kGiB;
    return res;
}

}  // namespace

MatmulResult measure_matmul(const std::string &device, const std::string &type, int n_threads, int size, int reps) {
    ggml_type t;
    if (type == "f32") t = GGML_TYPE_F32;
    else if (type == "f16") t = GGML_TYPE_F16;
    else throw_usage("matmul type '" + type + "' is not f32 or f16");
    return run_mul_mat(device, t, n_threads, size, size, size, reps);
}

HostLinkResult measure_host_link(const std::string &device, size_t bytes, int reps) {
    if (reps < 1) throw_usage("--reps: must be >= 1");
    ggml_backend_dev_t dev = find_dev(device);
    GgmlRun g;
    ggml_init_params ip{ggml_tensor_overhead() * 2, nullptr, true};
    g.ctx = ggml_init(ip);
    if (!g.ctx) throw_setup("ggml_init failed");
    ggml_tensor *t = ggml_new_tensor_1d(g.ctx, GGML_TYPE_F32, static_cast<int64_t>(bytes / sizeof(float)));
    g.buffer = ggml_backend_alloc_ctx_tensors_from_buft(g.ctx, ggml_backend_dev_buffer_type(dev));
    if (!g.buffer) throw_setup("cannot allocate " + std::to_string(bytes) + " bytes on " + device);
    std::vector<float> host(bytes / sizeof(float), 1.0f);
    std::vector<double> up, down;
    for (int r = 0; r < reps + 1; ++r) {
        auto t0 = Clock::now();
        ggml_backend_tensor_set(t, host.data(), 0, ggml_nbytes(t));
        auto t1 = Clock::now();
        ggml_backend_tensor_get(t, host.data(), 0, ggml_nbytes(t));
        auto t2 = Clock::now();
        if (r > 0) {
            up.push_back(secs(t0, t1));
            down.push_back(secs(t1, t2));
        }
    }
    std::sort(up.begin(), up.end());
    std::sort(down.begin(), down.end());
    HostLinkResult res;
    res.device = device;
    res.bytes = ggml_nbytes(t);
    res.upload_gib_s = static_cast<double>(res.bytes) / up[up.size() / 2] / kGiB;
    res.download_gib_s = static_cast<double>(res.bytes) / down[down.size() / 2] / kGiB;
    return res;
}

nlohmann::json to_json(const HostLinkResult &r) {
    return {{"device", r.device}, {"bytes", r.bytes}, {"upload_gib_s", r.upload_gib_s}, {"download_gib_s", r.download_gib_s}};
}

MatmulResult measure_gemv(const std::string &device, int n_threads, int m, int k, int reps) {
    auto r = run_mul_mat(device, GGML_TYPE_F16, n_threads, m, 1, k, reps);
    r.type = "gemv-f16";
    return r;
}

bool packed_gemm_available() { return t2w::gemm::packed_enabled(); }

MatmulResult measure_packed_gemm(int n_threads, int size, int reps) {
    if (size < 1) throw_usage("--matmul-size: must be >= 1");
    if (reps < 1) throw_usage("--reps: must be >= 1");
    if (n_threads < 1) throw_usage("threads: must be >= 1");
    if (!packed_gemm_available())
        throw_setup("the packed F32 GEMM is off here (neither AVX-512F nor AVX2 + FMA, or RTF_T2W_PACKED=0)");
    const int64_t N = size, K = size, M = size;
    std::mt19937 rng(1234);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> w(static_cast<size_t>(N * K)), x(static_cast<size_t>(M * K)), y(static_cast<size_t>(M * N));
    for (auto &v : w) v = nd(rng);
    for (auto &v : x) v = nd(rng);
    std::vector<float> packed(static_cast<size_t>(t2w::gemm::packed_floats(N, K)));
    t2w::gemm::pack(w.data(), N, K, packed.data());
    auto run = [&](int ith) { t2w::gemm::gemm(packed.data(), N, K, x.data(), K, M, nullptr, y.data(), N, ith, n_threads); };
    std::vector<double> times;
    for (int r = 0; r < reps + 1; ++r) {
        auto t0 = Clock::now();
        std::vector<std::thread> others;
        for (int i = 1; i < n_threads; ++i) others.emplace_back(run, i);
        run(0);
        for (auto &t : others) t.join();
        const double sec = secs(t0, Clock::now());
        if (r > 0) times.push_back(sec);
    }
    std::sort(times.begin(), times.end());
    const double t = times[times.size() / 2];
    MatmulResult res;
    res.device = "CPU";
    res.type = "packed-f32";
    res.n_threads = n_threads;
    res.m = res.n = res.k = size;
    res.ms = t * 1e3;
    res.gflops = 2.0 * static_cast<double>(M) * N * K / t / 1e9;
    res.gib_s = static_cast<double>(N * K * sizeof(float)) / t / kGiB;
    return res;
}

nlohmann::json to_json(const BandwidthResult &r) {
    return {{"n_threads", r.n_threads},     {"array_bytes", r.array_bytes}, {"reps", r.reps},
            {"read_gib_s", r.read_gib_s},   {"triad_gib_s", r.triad_gib_s}, {"copy_gib_s", r.copy_gib_s},
            {"copy_counting", "bytes copied once (as mbw's MEMCPY)"}, {"triad_counting", "3 arrays (STREAM)"}};
}

nlohmann::json to_json(const MatmulResult &r) {
    return {{"device", r.device}, {"type", r.type}, {"n_threads", r.n_threads}, {"m", r.m},        {"n", r.n},
            {"k", r.k},           {"ms", r.ms},     {"gflops", r.gflops},       {"gib_s", r.gib_s}};
}

}  // namespace rtf::predict
