// Tiny twins, generated for real: the whole kit passes the layout check, bytes are deterministic,
// upstream libllama loads the LLM twin and decodes finite, non-degenerate logits, a forward pass
// through the TTS twin is finite and samples more than one code, and the layout check names
// broken files (tensor removed, shape changed, truncated, not GGUF).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>

#include <llama.h>
#include <nlohmann/json.hpp>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "rtf/build-info.h"
#include "models/gguf/layout-check.h"
#include "twin-test-util.h"
#include "twin/twin.h"

using namespace rtf;
using namespace rtf::twin;
using namespace twin_test;
namespace fs = std::filesystem;
namespace m45 = rtf::gguf::minicpmo45;

namespace {

KitOptions tiny(const std::string &out, std::vector<Role> roles, uint64_t seed = 0) {
    KitOptions o;
    o.scale = Scale::tiny;
    o.dims = m45::dims_for_scale(Scale::tiny);
    o.out_dir = out;
    o.roles = std::move(roles);
    o.seed = seed;
    return o;
}

struct Softmax {
    float max_p = 0;
    int argmax = 0;
    bool finite = true;
};
Softmax softmax_stats(const float *logits, int n) {
    Softmax s;
    float mx = -INFINITY;
    for (int i = 0; i < n; ++i) {
        if (!std::isfinite(logits[i])) s.finite = false;
        if (logits[i] > mx) {
            mx = logits[i];
            s.argmax = i;
        }
    }
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
    s.max_p = static_cast<float>(1.0 / sum);
    return s;
}

}  // namespace

TEST(TinyKit, WholeKitPassesInspectAndDescribesItself) {
    rtf::test::ScratchDir t("twin-kit");
    const auto r = make_kit(tiny(t.dir.string(), {gguf::all_roles.begin(), gguf::all_roles.end()}));
    const auto rep = gguf::inspect_path(t.dir.string());
    for (const auto &f : rep.files)
        for (const auto &p : f.problems) ADD_FAILURE() << p.message();
    EXPECT_EQ(rep.files.size(), 12u);  // every role, the optional vision encoder too, and the two voices
    EXPECT_EQ(rep.n_problems(), 0u);

    std::ifstream in(t.file("rtf-kit.json"));
    const auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j.at("family"), "minicpmo45");
    EXPECT_EQ(j.at("scale"), "tiny");
    EXPECT_EQ(j.at("dims").at("flow_matching").at("n_blocks"), 2);
    ASSERT_EQ(j.at("files").size(), 10u);
    // Two more voices: the prompt cache's layout under other seeds (other bytes, same header).
    ASSERT_EQ(j.at("voices").size(), 2u);
    EXPECT_EQ(j.at("voices")[0].at("path"), "voices/twin-a/prompt_cache.gguf");
    EXPECT_EQ(j.at("voices")[1].at("path"), "voices/twin-b/prompt_cache.gguf");
    EXPECT_NE(j.at("voices")[0].at("seed"), j.at("voices")[1].at("seed"));
    ASSERT_EQ(r.voices.size(), 2u);
    EXPECT_EQ(r.voices[0].bytes, r.voices[1].bytes);
    auto bytes_of = [&](const std::string &rel) {
        std::ifstream f(t.file(rel), std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
    };
    const std::string pc = bytes_of("token2wav-gguf/prompt_cache.gguf"), a = bytes_of("voices/twin-a/prompt_cache.gguf"),
                      b = bytes_of("voices/twin-b/prompt_cache.gguf");
    EXPECT_EQ(a.size(), pc.size());
    EXPECT_NE(a, pc);
    EXPECT_NE(a, b);
    EXPECT_EQ(j.at("dims").at("apm").at("n_out"), 128);  // the tiny LLM's width
    for (const auto &f : j.at("files")) {
        const auto p = t.file(f.at("path").get<std::string>());
        EXPECT_EQ(fs::file_size(p), f.at("bytes").get<uint64_t>()) << p;
    }
    // The reference runtime's layout: token2wav-gguf/ beside tts/.
    EXPECT_TRUE(fs::exists(t.file("tts/MiniCPM-o-4_5-projector-F16.gguf")));
    EXPECT_TRUE(fs::exists(t.file("tts/MiniCPM-o-4_5-tts-F16.gguf")));
    EXPECT_TRUE(fs::exists(t.file("token2wav-gguf/encoder.gguf")));
    EXPECT_TRUE(fs::exists(t.file("MiniCPM-o-4_5-F16.gguf")));
    EXPECT_TRUE(fs::exists(t.file("audio/MiniCPM-o-4_5-audio-F16.gguf")));
    EXPECT_TRUE(fs::exists(t.file("vision/MiniCPM-o-4_5-vision-F16.gguf")));
    // Sizes equal the dry run's.
    auto o = tiny("", {gguf::all_roles.begin(), gguf::all_roles.end()});
    o.dry_run = true;
    const auto d = make_kit(o);
    for (size_t i = 0; i < d.files.size(); ++i) EXPECT_EQ(d.files[i].bytes, r.files[i].bytes) << d.files[i].path;
}

// The seeded prompt bundle beside prompt_cache.gguf (twin/prompt-bundle.h): sizes of a
// bundle for the layout's L (T_p = L/2 + 3 codes, T_m = L rows of 80), codes in range, the
// same bytes for the same seed and others for another.
TEST(TinyKit, PromptBundleBesideThePromptCache) {
    rtf::test::ScratchDir a("twin-pb-a"), b("twin-pb-b"), c("twin-pb-c");
    make_kit(tiny(a.dir.string(), {Role::prompt_cache}, 7));
    make_kit(tiny(b.dir.string(), {Role::prompt_cache}, 7));
    make_kit(tiny(c.dir.string(), {Role::prompt_cache}, 8));
    const int64_t L = m45::dims_for_scale(m45::Scale::tiny).prompt_cache.L;
    const std::string d = "token2wav-gguf/";
    EXPECT_EQ(fs::file_size(a.file(d + "spk_f32.bin")), 192u * 4);
    EXPECT_EQ(fs::file_size(a.file(d + "prompt_tokens_i32.bin")), static_cast<uint64_t>(L / 2 + 3) * 4);
    EXPECT_EQ(fs::file_size(a.file(d + "prompt_mel_btc_f32.bin")), static_cast<uint64_t>(L) * 80 * 4);
    std::ifstream in(a.file(d + "prompt_tokens_i32.bin"), std::ios::binary);
    std::vector<int32_t> tok(static_cast<size_t>(L / 2 + 3));
    in.read(reinterpret_cast<char *>(tok.data()), static_cast<std::streamsize>(tok.size() * 4));
    std::set<int32_t> distinct;
    for (int32_t t : tok) {
        EXPECT_TRUE(t >= 0 && t < 6561) << t;
        distinct.insert(t);
    }
    EXPECT_GT(distinct.size(), tok.size() / 2);
    for (const char *f : {"spk_f32.bin", "prompt_tokens_i32.bin", "prompt_mel_btc_f32.bin"}) {
        EXPECT_TRUE(same_bytes(a.file(d + f), b.file(d + f))) << f;
        EXPECT_FALSE(same_bytes(a.file(d + f), c.file(d + f))) << f;
    }
}

TEST(TinyKit, SameSeedSameBytes) {
    rtf::test::ScratchDir a("twin-det-a"), b("twin-det-b"), c("twin-det-c");
    const std::vector<Role> roles{Role::llm, Role::tts, Role::projector, Role::flow_extra};
    make_kit(tiny(a.dir.string(), roles, 7));
    make_kit(tiny(b.dir.string(), roles, 7));
    make_kit(tiny(c.dir.string(), {Role::projector}, 8));
    for (Role r : roles) {
        const auto rel = m45::file_name(r, WeightType::f16);
        EXPECT_TRUE(same_bytes(a.file(rel), b.file(rel))) << rel;
    }
    const auto proj = m45::file_name(Role::projector, WeightType::f16);
    EXPECT_FALSE(same_bytes(a.file(proj), c.file(proj)));
    // As in the real bundle, the projector file holds the TTS file's projector_semantic values.
    gguf::GgufFile p(a.file(proj)), tts(a.file(m45::file_name(Role::tts, WeightType::f16)));
    EXPECT_EQ(read_f32(p, "linear1.weight"), read_f32(tts, "projector_semantic.linear1.weight"));
    EXPECT_EQ(read_f32(p, "linear2.bias"), read_f32(tts, "projector_semantic.linear2.bias"));
}

namespace rtf::gguf {
void PrintTo(WeightType t, std::ostream *os) { *os << weight_type_name(t); }
}  // namespace rtf::gguf

class LlmTwin : public ::testing::TestWithParam<WeightType> {};

TEST_P(LlmTwin, LibllamaLoadsAndDecodesFiniteLogits) {
    rtf::test::ScratchDir t("twin-llm");
    auto o = tiny(t.dir.string(), {Role::llm});
    o.type = GetParam();
    make_kit(o);
    const std::string path = t.file(m45::file_name(Role::llm, o.type));
    EXPECT_TRUE(gguf::check_layout(path).empty());

    llama_backend_init();
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    auto mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(path.c_str(), mp);
    ASSERT_NE(model, nullptr) << "libllama rejected " << path;
    const llama_vocab *vocab = llama_model_get_vocab(model);
    EXPECT_EQ(llama_vocab_n_tokens(vocab), m45::kLlmVocab);
    EXPECT_EQ(llama_model_n_embd(model), 128);

    // The copied tokenizer splits text as llama.cpp's Qwen2 vocabulary does.
    auto vp = llama_model_default_params();
    vp.vocab_only = true;
    llama_model *ref = llama_model_load_from_file((std::string(RTF_VOCAB_DIR) + "/ggml-vocab-qwen2.gguf").c_str(), vp);
    ASSERT_NE(ref, nullptr);
    const std::string text = "Hello world, this is a twin speaking. 你好！";
    std::vector<llama_token> tok(64), tok_ref(64);
    const int n = llama_tokenize(vocab, text.c_str(), int(text.size()), tok.data(), 64, false, false);
    const int n_ref = llama_tokenize(llama_model_get_vocab(ref), text.c_str(), int(text.size()), tok_ref.data(), 64, false, false);
    ASSERT_GT(n, 5);
    ASSERT_EQ(n, n_ref);
    tok.resize(size_t(n));
    tok_ref.resize(size_t(n));
    EXPECT_EQ(tok, tok_ref);
    const std::string im_end = "<|im_end|>";
    llama_token sp[4];
    EXPECT_EQ(llama_tokenize(vocab, im_end.c_str(), int(im_end.size()), sp, 4, false, true), 1);
    EXPECT_EQ(sp[0], 151645);
    llama_model_free(ref);

    auto cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 64;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.embeddings = true;  // the speak path reads the post-output_norm hidden states
    llama_context *ctx = llama_init_from_model(model, cp);
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(tok.data(), n)), 0);
    std::set<int> picked;
    std::mt19937 rng(1);
    float max_p = 0;
    for (int step = 0; step < 16; ++step) {
        const float *logits = llama_get_logits_ith(ctx, -1);
        ASSERT_NE(logits, nullptr);
        const auto s = softmax_stats(logits, m45::kLlmVocab);
        ASSERT_TRUE(s.finite) << "step " << step;
        max_p = std::max(max_p, s.max_p);
        const float *emb = llama_get_embeddings_ith(ctx, -1);
        ASSERT_NE(emb, nullptr);
        for (int i = 0; i < 128; ++i) ASSERT_TRUE(std::isfinite(emb[i]));
        // sample from the top 40 by probability (temperature 1)
        std::vector<std::pair<float, int>> top;
        for (int i = 0; i < m45::kLlmVocab; ++i) top.emplace_back(logits[i], i);
        std::partial_sort(top.begin(), top.begin() + 40, top.end(), std::greater<>());
        std::vector<double> w;
        for (int i = 0; i < 40; ++i) w.push_back(std::exp(double(top[size_t(i)].first - top[0].first)));
        llama_token next = top[std::discrete_distribution<int>(w.begin(), w.end())(rng)].second;
        picked.insert(next);
        ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(&next, 1)), 0);
    }
    EXPECT_LT(max_p, 0.9f) << "sampling degenerates into one token";
    EXPECT_GT(picked.size(), 4u);
    llama_free(ctx);
    llama_model_free(model);
}

INSTANTIATE_TEST_SUITE_P(Types, LlmTwin, ::testing::Values(WeightType::f16, WeightType::q8_0, WeightType::q4_k_m),
                         [](const auto &param_info) { return std::string(gguf::weight_type_name(param_info.param)); });

namespace {

// Plain C++ forward of the TTS twin (spec §1.3, §2.3-2.5): Llama blocks with NORM RoPE
// (θ 10000), RMSNorm, SwiGLU; logits from head_code in its transposed storage.
struct TtsRef {
    int64_t D, F, H, L;
    std::vector<std::vector<float>> w;  // per layer: attn_norm q k v o ffn_norm gate up down
    std::vector<float> out_norm, head, emb_text, emb_code;
    std::vector<std::vector<float>> K, V;  // per layer: [pos][D]
    explicit TtsRef(const gguf::GgufFile &f) {
        D = f.get_int("llama.embedding_length");
        F = f.get_int("llama.feed_forward_length");
        H = f.get_int("llama.attention.head_count");
        L = f.get_int("llama.block_count");
        for (int64_t l = 0; l < L; ++l)
            for (const char *n : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                                  "ffn_up", "ffn_down"})
                w.push_back(read_f32(f, "blk." + std::to_string(l) + "." + n + ".weight"));
        out_norm = read_f32(f, "output_norm.weight");
        head = read_f32(f, "head_code.0.weight");
        emb_text = read_f32(f, "emb_text.weight");
        emb_code = read_f32(f, "emb_code.0.weight");
        K.resize(size_t(L));
        V.resize(size_t(L));
    }
    static std::vector<float> matvec(const std::vector<float> &W, const std::vector<float> &x, int64_t out) {
        const int64_t in = int64_t(x.size());
        std::vector<float> y(static_cast<size_t>(out));
        for (int64_t o = 0; o < out; ++o) {
            double s = 0;
            for (int64_t i = 0; i < in; ++i) s += double(W[size_t(o * in + i)]) * x[size_t(i)];
            y[size_t(o)] = float(s);
        }
        return y;
    }
    static std::vector<float> rmsnorm(const std::vector<float> &x, const std::vector<float> &g) {
        double s = 0;
        for (float v : x) s += double(v) * v;
        const float r = float(1.0 / std::sqrt(s / double(x.size()) + 1e-6));
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * g[i];
        return y;
    }
    void rope(std::vector<float> &x, int pos) const {
        const int64_t hd = D / H;
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < hd; i += 2) {
                const double th = pos * std::pow(10000.0, -double(i) / double(hd));
                float &a = x[size_t(h * hd + i)], &b = x[size_t(h * hd + i + 1)];
                const float c = float(std::cos(th)), s = float(std::sin(th));
                const float a0 = a;
                a = a0 * c - b * s;
                b = a0 * s + b * c;
            }
    }
    // Feeds one input row at position `pos`; returns the 6562 logits.
    std::vector<float> step(std::vector<float> x, int pos) {
        const int64_t hd = D / H;
        for (int64_t l = 0; l < L; ++l) {
            const auto &W = [&](int k) -> const std::vector<float> & { return w[size_t(l * 9 + k)]; };
            auto h = rmsnorm(x, W(0));
            auto q = matvec(W(1), h, D), k = matvec(W(2), h, D), v = matvec(W(3), h, D);
            rope(q, pos);
            rope(k, pos);
            K[size_t(l)].insert(K[size_t(l)].end(), k.begin(), k.end());
            V[size_t(l)].insert(V[size_t(l)].end(), v.begin(), v.end());
            std::vector<float> att(size_t(D), 0.0f);
            for (int64_t hh = 0; hh < H; ++hh) {
                std::vector<double> sc(size_t(pos + 1));
                double mx = -1e300;
                for (int p = 0; p <= pos; ++p) {
                    double s = 0;
                    for (int64_t i = 0; i < hd; ++i) s += double(q[size_t(hh * hd + i)]) * K[size_t(l)][size_t(p * D + hh * hd + i)];
                    sc[size_t(p)] = s / std::sqrt(double(hd));
                    mx = std::max(mx, sc[size_t(p)]);
                }
                double z = 0;
                for (auto &s : sc) z += (s = std::exp(s - mx));
                for (int p = 0; p <= pos; ++p)
                    for (int64_t i = 0; i < hd; ++i)
                        att[size_t(hh * hd + i)] += float(sc[size_t(p)] / z) * V[size_t(l)][size_t(p * D + hh * hd + i)];
            }
            const auto o = matvec(W(4), att, D);
            for (int64_t i = 0; i < D; ++i) x[size_t(i)] += o[size_t(i)];
            h = rmsnorm(x, W(5));
            auto g = matvec(W(6), h, F), u = matvec(W(7), h, F);
            for (int64_t i = 0; i < F; ++i) g[size_t(i)] = g[size_t(i)] / (1.0f + std::exp(-g[size_t(i)])) * u[size_t(i)];
            const auto dn = matvec(W(8), g, D);
            for (int64_t i = 0; i < D; ++i) x[size_t(i)] += dn[size_t(i)];
        }
        const auto zf = rmsnorm(x, out_norm);
        std::vector<float> logits(size_t(m45::kTtsAudio), 0.0f);
        for (int64_t j = 0; j < D; ++j)
            for (int64_t r = 0; r < m45::kTtsAudio; ++r) logits[size_t(r)] += zf[size_t(j)] * head[size_t(j * m45::kTtsAudio + r)];
        return logits;
    }
    std::vector<float> row(const std::vector<float> &E, int64_t r) const {
        return {E.begin() + r * D, E.begin() + (r + 1) * D};
    }
};

}  // namespace

TEST(TinyKit, TtsForwardIsFiniteAndSamplesManyCodes) {
    rtf::test::ScratchDir t("twin-tts");
    auto o = tiny(t.dir.string(), {Role::tts, Role::projector});
    // RTF_TEST_TTS_SCALE=cpu runs the same check on the full-shape TTS (about a minute; not in CI).
    if (const char *sc = std::getenv("RTF_TEST_TTS_SCALE")) {
        o.scale = m45::parse_scale(sc, "RTF_TEST_TTS_SCALE");
        o.dims = m45::dims_for_scale(o.scale);
    }
    make_kit(o);
    gguf::GgufFile f(t.file(m45::file_name(Role::tts, WeightType::f16)));
    gguf::GgufFile pf(t.file(m45::file_name(Role::projector, WeightType::f16)));
    TtsRef m(f);
    const auto W1 = read_f32(pf, "linear1.weight"), b1 = read_f32(pf, "linear1.bias");
    const auto W2 = read_f32(pf, "linear2.weight"), b2 = read_f32(pf, "linear2.bias");
    const int64_t n_llm = pf.find_tensor("linear1.weight")->ne[0];

    // Condition rows: E_text[y] + l2norm(W2 ReLU(W1 h + b1) + b2), then audio BOS (151687).
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    int pos = 0;
    std::vector<float> logits;
    for (int i = 0; i < 10; ++i) {
        std::vector<float> h(static_cast<size_t>(n_llm));
        for (auto &v : h) v = nd(rng);
        auto a = TtsRef::matvec(W1, h, m.D);
        for (int64_t k = 0; k < m.D; ++k) a[size_t(k)] = std::max(0.0f, a[size_t(k)] + b1[size_t(k)]);
        auto p = TtsRef::matvec(W2, a, m.D);
        double nn = 0;
        for (int64_t k = 0; k < m.D; ++k) nn += double(p[size_t(k)] += b2[size_t(k)]) * p[size_t(k)];
        auto c = m.row(m.emb_text, 1000 + 7919 * i % 140000);
        for (int64_t k = 0; k < m.D; ++k) c[size_t(k)] += float(p[size_t(k)] / std::sqrt(nn + 1e-8));
        logits = m.step(c, pos++);
    }
    logits = m.step(m.row(m.emb_text, 151687), pos++);
    // 30 codes with EOS masked (as a minimum-length rule would), recording EOS's probability:
    // EOS must be reachable (the turn ends) but not immediate (a turn yields a few dozen codes).
    std::set<int> codes;
    double p_eos_sum = 0;
    const int steps = 30;
    const char *scale_name = m45::scale_name(o.scale);
    for (int s = 0; s < steps; ++s) {
        const auto st = softmax_stats(logits.data(), int(logits.size()));
        ASSERT_TRUE(st.finite) << "step " << s;
        ASSERT_LT(st.max_p, 0.9f) << "step " << s << ": one code takes almost all probability";
        std::vector<double> w(logits.size());
        const float mx = *std::max_element(logits.begin(), logits.end());
        double z = 0;
        for (size_t i = 0; i < w.size(); ++i) z += (w[i] = std::exp(double(logits[i] - mx)));
        p_eos_sum += w.back() / z;
        if (std::getenv("RTF_TEST_VERBOSE"))
            std::printf("step %d: EOS logit %.3f, max other %.3f, log-mass others %.3f\n", s, double(logits.back()),
                        double(*std::max_element(logits.begin(), logits.end() - 1)), std::log(z - w.back()) + mx);
        w.back() = 0.0;
        const int r = std::discrete_distribution<int>(w.begin(), w.end())(rng);
        codes.insert(r);
        logits = m.step(m.row(m.emb_code, r), pos++);
    }
    const double p_eos = p_eos_sum / steps;
    std::printf("%s TTS: mean P(EOS) per step %.4f (expected codes per turn ~%.0f), %zu distinct codes in %d\n", scale_name, p_eos,
                1.0 / p_eos, codes.size(), steps);
    EXPECT_GE(codes.size(), 10u);
    EXPECT_GT(p_eos, 0.002);
    EXPECT_LT(p_eos, 0.1);
}

TEST(TinyKit, InspectNamesBrokenFiles) {
    rtf::test::ScratchDir t("twin-broken");
    const auto d = m45::dims_for_scale(Scale::tiny);
    // One tensor removed.
    auto enc = m45::encoder_layout(d.encoder);
    enc.tensors.erase(std::find_if(enc.tensors.begin(), enc.tensors.end(),
                                   [](const auto &x) { return x.name == "encoders.0.self_attn.linear_k.weight"; }));
    const auto pe = t.file("a/encoder.gguf");
    write_layout(enc, pe, 0, "", false, {});
    auto ps = gguf::check_layout(pe);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].kind, "missing_tensor");
    EXPECT_NE(ps[0].message().find("encoders.0.self_attn.linear_k.weight"), std::string::npos);
    EXPECT_NE(ps[0].message().find(pe), std::string::npos);
    // One shape changed.
    auto fx = m45::flow_extra_layout(d.flow_extra);
    fx.tensors[1].ne[1] = 81;  // spk_embed_affine_layer.weight
    const auto pf = t.file("b/flow_extra.gguf");
    write_layout(fx, pf, 0, "", false, {});
    ps = gguf::check_layout(pf);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].kind, "shape");
    EXPECT_NE(ps[0].message().find("spk_embed_affine_layer.weight"), std::string::npos);
    EXPECT_NE(ps[0].message().find("[192, 81]"), std::string::npos);
    // Truncated.
    const auto pt = t.file("c/flow_extra.gguf");
    write_layout(m45::flow_extra_layout(d.flow_extra), pt, 0, "", false, {});
    EXPECT_TRUE(gguf::check_layout(pt).empty());
    fs::resize_file(pt, fs::file_size(pt) / 2);
    ps = gguf::check_layout(pt);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].kind, "truncated");
    EXPECT_EQ(ps[0].subject, "input_embedding.weight");
    // Not GGUF.
    const auto pn = t.file("d/hifigan2.gguf");
    fs::create_directories(t.dir / "d");
    std::ofstream(pn) << "RIFF....WAVEfmt ";
    ps = gguf::check_layout(pn);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].kind, "not_gguf");
    EXPECT_THROW(gguf::require_layout(pn), Error);
}

TEST(TinyKit, LikeTwinCopiesTheHeader) {
    rtf::test::ScratchDir t("twin-like");
    auto o = tiny(t.dir.string(), {Role::llm});
    o.type = WeightType::q4_k_m;
    make_kit(o);
    const auto src = t.file(m45::file_name(Role::llm, o.type));
    const auto dst = t.file("like.gguf");
    const auto r = make_like(src, dst, 99);
    EXPECT_EQ(r.bytes, fs::file_size(src));
    EXPECT_EQ(fs::file_size(dst), fs::file_size(src));
    gguf::GgufFile a(src), b(dst);
    ASSERT_EQ(a.data_offset(), b.data_offset());
    {
        std::ifstream fa(src, std::ios::binary), fb(dst, std::ios::binary);
        std::vector<char> ha(a.data_offset()), hb(a.data_offset());
        fa.read(ha.data(), std::streamsize(ha.size()));
        fb.read(hb.data(), std::streamsize(hb.size()));
        EXPECT_EQ(ha, hb);
    }
    EXPECT_TRUE(gguf::check_layout(dst, Role::llm).empty());
    EXPECT_NE(read_f32(a, "blk.0.attn_q.weight"), read_f32(b, "blk.0.attn_q.weight"));
    for (float v : read_f32(b, "output.weight")) ASSERT_TRUE(std::isfinite(v));
    EXPECT_FALSE(same_bytes(src, dst));
    EXPECT_THROW(make_like(t.file("missing.gguf"), t.file("x.gguf"), 0), Error);
}
