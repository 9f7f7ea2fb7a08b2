// bench-decode-batch: what merging streams buys on the memory-bound decode steps. For the
// LLM and the TTS of a kit, k = 1, 2, 4 streams (one sequence each of one batched context,
// decode-batcher.h) each run `steps` one-row decodes at once; per k: wall ms per step (one
// merged decode serves k streams) and per stream-step, and the decode call alone (the
// batcher's step timing). Repetitions interleave the k's (1 2 4, 2 4 1, 4 1 2, ...) so that
// drift of a shared machine hits each alike; medians are printed.
//   bench-decode-batch --kit /tmp/kit [--steps 64] [--reps 3] [--threads 0] [--only llm|tts]
// Not a test: no assertion. Output: one Markdown table (stdout).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <llama.h>

#include "models/lm/decode-batcher.h"
#include "models/lm/tts-engine.h"
#include "speak/kit.h"

using namespace rtf;
using namespace rtf::lm;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct Figures {
    std::map<int, std::vector<double>> wall_ms_per_step, call_ms;
};

// k streams, `steps` one-row decodes each after a `prefill`-row prompt (positions as in a reply).
void run(DecodeBatcher &b, std::vector<std::unique_ptr<DecodeBatcher::Stream>> &s, int k, int steps, bool embd,
         int n_embd, Figures &f) {
    const int prefill = 8;
    std::mt19937 rng(static_cast<unsigned>(k));
    std::vector<int32_t> toks(prefill);
    for (auto &t : toks) t = static_cast<int32_t>(rng() % 1000 + 100);
    std::vector<float> rows(static_cast<size_t>(prefill) * static_cast<size_t>(std::max(1, n_embd)));
    std::normal_distribution<float> nd(0.0f, 0.05f);
    for (auto &x : rows) x = nd(rng);
    for (int i = 0; i < k; ++i) {
        DecodeRequest r;
        r.n = prefill;
        r.rm_from = 0;
        if (embd) r.embd = rows.data(); else r.tokens = toks.data();
        s[static_cast<size_t>(i)]->decode(r);
    }
    const auto before = b.stats();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> th;
    for (int i = 0; i < k; ++i)
        th.emplace_back([&, i] {
            auto &st = *s[static_cast<size_t>(i)];
            st.set_active(true);
            for (int p = 0; p < steps; ++p) {
                DecodeRequest r;
                r.n = 1;
                r.pos0 = prefill + p;
                r.want_embd = r.want_logits = true;
                if (embd) r.embd = rows.data() + static_cast<size_t>(p % prefill) * static_cast<size_t>(n_embd);
                else r.tokens = toks.data() + (p % prefill);
                st.decode(r);
            }
            st.set_active(false);
        });
    for (auto &t : th) t.join();
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto after = b.stats();
    f.wall_ms_per_step[k].push_back(wall / steps);
    const auto kk = static_cast<size_t>(k - 1);
    const int64_t n = after.step_count[kk] - before.step_count[kk];
    if (n > 0) f.call_ms[k].push_back((after.step_ms[kk] - before.step_ms[kk]) / static_cast<double>(n));
    for (int i = 0; i < k; ++i) s[static_cast<size_t>(i)]->seq_rm(0);
}

void bench(const char *stage, const std::shared_ptr<DecodeBatcher> &b, bool embd, int steps, int reps) {
    std::vector<std::unique_ptr<DecodeBatcher::Stream>> s;
    for (int i = 0; i < 4; ++i) s.push_back(b->join());
    const int n_embd = llama_model_n_embd(b->backend().model());
    Figures f;
    const std::vector<int> ks = {1, 2, 4};
    run(*b, s, 1, 8, embd, n_embd, f);  // warm-up (first touch), dropped
    f = {};
    for (int r = 0; r < reps; ++r)
        for (size_t j = 0; j < ks.size(); ++j) run(*b, s, ks[(j + static_cast<size_t>(r)) % ks.size()], steps, embd, n_embd, f);
    const double base = median(f.wall_ms_per_step[1]);
    for (int k : ks) {
        const double w = median(f.wall_ms_per_step[k]);
        std::printf("| %s | %d | %.3f | %.3f | %.3f | %.2fx |\n", stage, k, w, w / k, median(f.call_ms[k]),
                    base > 0 ? base * k / w : 0.0);
    }
}

}  // namespace

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured
    std::string kit_dir;
    int steps = 64, reps = 3, threads = 0;
    std::string only;  // "llm" or "tts": one stage
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--kit") kit_dir = argv[i + 1];
        else if (a == "--steps") steps = std::atoi(argv[i + 1]);
        else if (a == "--reps") reps = std::atoi(argv[i + 1]);
        else if (a == "--threads") threads = std::atoi(argv[i + 1]);
        else if (a == "--only") only = argv[i + 1];
        else { std::fprintf(stderr, "unknown flag %s\n", a.c_str()); return 1; }
    }
    if (kit_dir.empty()) { std::fprintf(stderr, "usage: bench-decode-batch --kit DIR [--steps N] [--reps N] [--threads N]\n"); return 1; }
    try {
        const speak::Kit kit = speak::resolve_kit(kit_dir);
        ModelPlacement pl;
        pl.n_threads = pl.n_threads_batch = threads;
        pl.n_ctx = 1024;
        std::printf("kit %s, %d steps per stream, %d interleaved reps, medians\n\n", kit_dir.c_str(), steps, reps);
        std::printf("| stage | streams k | wall ms per step | ms per stream-step | decode call ms | stream-steps/s vs k=1 |\n");
        std::printf("|---|---:|---:|---:|---:|---:|\n");
        if (only != "tts") bench("llm", make_llama_batcher({"llm", 4, 512, 5.0}, kit.llm, pl, true, false), false, steps, reps);
        if (only == "llm") return 0;
        std::string derived;
        {
            TtsConfig tc;
            tc.model_path = kit.tts;
            tc.projector_path = kit.projector;
            derived = TtsEngine(tc).derived_model_path();
        }
        bench("tts", make_llama_batcher({"tts", 4, 512, 5.0}, derived, pl, true, true), true, steps, reps);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench-decode-batch: %s\n", e.what());
        return 1;
    }
    return 0;
}
