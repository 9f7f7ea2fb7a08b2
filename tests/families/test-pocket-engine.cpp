// Pocket TTS through libllama + libmtmd on a tiny twin: our generator and decoder against the
// pinned tree's own helper pipeline (mtmd_helper_gen_audio_*: what llama-tts runs, the backbone's
// sampled token being ignored by this family), bit for bit; streamed decoding against one-shot.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <llama.h>
#include <mtmd-helper.h>
#include <mtmd.h>

#include "common/phase-clock.h"
#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/gen-audio/pocket-engine.h"
#include "speak/knobs.h"
#include "speak/speak.h"
#include "twin/twin.h"

namespace {

using rtf::pocket::MimiDecoder;
using rtf::pocket::PocketConfig;
using rtf::pocket::PocketFrame;
using rtf::pocket::PocketGenerator;

// The tests' kit: a tiny twin made here, or the kit $RTF_POCKET_KIT names (the full-shape
// comparison by hand: RTF_POCKET_KIT=~/.cache/rtfkit/kits/pocket-tts-cpu-f16-seed0).
struct Kit {
    rtf::test::ScratchDir dir{"pocket"};  // removed at exit: never the $RTF_POCKET_KIT folder
    std::filesystem::path root = dir.dir;
    Kit() {
        if (const char *k = std::getenv("RTF_POCKET_KIT"); k && *k) {
            root = k;
            return;
        }
        rtf::twin::KitOptions o;
        o.family = "pocket-tts";
        o.out_dir = dir.dir.string();
        o.roles.assign(rtf::gguf::mtmd_family_roles.begin(), rtf::gguf::mtmd_family_roles.end());
        rtf::twin::make_kit(o);
    }
    std::string backbone() const { return (root / "pocket-tts.gguf").string(); }
    std::string mmproj() const { return (root / "mmproj-pocket-tts.gguf").string(); }
};

const Kit &kit() {
    static Kit k;
    return k;
}

PocketConfig config() {
    PocketConfig c;
    c.backbone_path = kit().backbone();
    c.mmproj_path = kit().mmproj();
    c.placement.n_threads = c.placement.n_threads_batch = 2;
    c.placement.device = "CPU";
    c.seed = 42;
    return c;
}

// A 1-s 24 kHz mono 16-bit WAV (a chirp), as a speaker reference.
std::string write_voice(const std::string &path) {
    const int sr = 24000, n = sr;
    std::vector<int16_t> s(n);
    for (int i = 0; i < n; ++i) s[i] = static_cast<int16_t>(8000 * std::sin(2 * M_PI * (200 + 300.0 * i / n) * i / sr));
    std::FILE *f = std::fopen(path.c_str(), "wb");
    auto u32 = [&](uint32_t v) { std::fwrite(&v, 4, 1, f); };
    auto u16 = [&](uint16_t v) { std::fwrite(&v, 2, 1, f); };
    std::fwrite("RIFF", 1, 4, f);
    u32(36 + 2 * n);
    std::fwrite("WAVEfmt ", 1, 8, f);
    u32(16), u16(1), u16(1), u32(sr), u32(2 * sr), u16(2), u16(16);
    std::fwrite("data", 1, 4, f);
    u32(2 * n);
    std::fwrite(s.data(), 2, n, f);
    std::fclose(f);
    return path;
}

// The pinned tree's helper pipeline, driven as llama-tts drives it (prompt in one step; the
// sampled token is ignored by this family, so none is passed).
std::vector<float> reference_pcm(const PocketConfig &c, const std::string &text) {
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model *model = llama_model_load_from_file(c.backbone_path.c_str(), mp);
    EXPECT_NE(model, nullptr);
    auto cp = llama_context_default_params();
    cp.embeddings = true;
    cp.n_ctx = 4096;
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context *lctx = llama_init_from_model(model, cp);
    auto mparams = mtmd_context_params_default();
    mparams.use_gpu = false;
    mparams.n_threads = 2;
    mparams.print_timings = false;
    mtmd_context *mctx = mtmd_init_from_file(c.mmproj_path.c_str(), model, mparams);
    EXPECT_NE(mctx, nullptr);
    mtmd_helper_gen_audio *gen = mtmd_helper_gen_audio_init(lctx, mctx);
    mtmd_bitmap *voice = nullptr;
    if (!c.speaker_file.empty()) voice = mtmd_helper_bitmap_init_from_file(mctx, c.speaker_file.c_str(), false, {}).bitmap;
    mtmd_helper_gen_audio_inp in{};
    in.seq_id = 0;
    in.prompt = text.c_str();
    in.prompt_len = text.size();
    in.speaker_ref = voice;
    in.top_k = 50;
    in.top_p = 1.0f;
    in.seed = c.seed;
    in.out_type = MTMD_HELPER_GEN_AUDIO_OUTTYPE_PCM;
    EXPECT_EQ(mtmd_helper_gen_audio_set_input(gen, &in), 0);
    int r;
    while ((r = mtmd_helper_gen_audio_step_prompt(gen, 512)) > 0) {}
    EXPECT_EQ(r, 0);
    const float *h = llama_get_embeddings_ith(lctx, -1);
    bool stop = false;
    for (int n = 0; !stop && n < 2000; ++n) {
        const float *next = nullptr;
        EXPECT_EQ(mtmd_helper_gen_audio_step_gen(gen, LLAMA_TOKEN_NULL, h, &next, &stop), 0);
        if (!next) break;
        h = next;
    }
    int32_t sr = 0;
    const char *data = nullptr;
    size_t len = 0;
    int64_t ns = 0;
    EXPECT_EQ(mtmd_helper_gen_audio_get_output(gen, &sr, &data, &len, &ns), 0);
    std::vector<float> pcm(reinterpret_cast<const float *>(data), reinterpret_cast<const float *>(data) + ns);
    if (voice) mtmd_bitmap_free(voice);
    mtmd_helper_gen_audio_free(gen);
    mtmd_free(mctx);
    llama_free(lctx);
    llama_model_free(model);
    return pcm;
}

// Ours: frames decoded `first` at first, then `every` at a time (the decoder restarting where a
// new text chunk starts, as the reference does).
std::vector<float> our_pcm(PocketGenerator &gen, MimiDecoder &dec, const std::string &text, size_t first, size_t every,
                           int64_t *n_frames = nullptr, const std::string &voice = "default") {
    gen.start(text, voice);
    dec.reset();
    std::vector<float> pcm, buf;
    size_t want = first;
    auto flush = [&] {
        const auto p = dec.decode(buf.data(), buf.size() / static_cast<size_t>(gen.n_latent()));
        pcm.insert(pcm.end(), p.begin(), p.end());
        buf.clear();
        want = every;
    };
    PocketFrame f;
    int64_t n = 0;
    while (gen.next(f)) {
        if (f.new_chunk) {
            if (!buf.empty()) flush();
            dec.reset();
        }
        buf.insert(buf.end(), f.latent.begin(), f.latent.end());
        ++n;
        if (buf.size() / static_cast<size_t>(gen.n_latent()) >= want) flush();
    }
    if (!buf.empty()) flush();
    if (n_frames) *n_frames = n;
    return pcm;
}

double snr_db(const std::vector<float> &ref, const std::vector<float> &x) {
    double s = 0, e = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        s += double(ref[i]) * ref[i];
        e += (double(ref[i]) - x[i]) * (double(ref[i]) - x[i]);
    }
    return e == 0 ? 999.0 : 10 * std::log10(s / e);
}

constexpr const char *kShort = "hello world, this is a test";
// Over 50 tokens: spoken in chunks, each re-prompted after the voice.
constexpr const char *kLong =
    "The quick brown fox jumps over the lazy dog. Real time means the listener never waits! Each second "
    "of speech is made in less than a second; chunk after chunk, while the model is still thinking.";

TEST(PocketText, PreparedAsLlamaCppDoes) {
    EXPECT_EQ(PocketGenerator::prepare_text("  hello\nworld; ok  ", false), "Hello world, ok.");
    EXPECT_EQ(PocketGenerator::prepare_text("Done!", false), "Done!");
    EXPECT_EQ(PocketGenerator::prepare_text("   ", false), "");
    EXPECT_EQ(PocketGenerator::prepare_text("two words", true), "        Two words.");
    EXPECT_EQ(PocketGenerator::prepare_text("one two three four five", true), "One two three four five.");
}

TEST(PocketEngine, EqualsTheHelperPipelineBitForBit) {
    const PocketConfig c = config();
    PocketGenerator gen(c);
    MimiDecoder dec(gen);
    EXPECT_EQ(gen.variant(), "english");
    EXPECT_FLOAT_EQ(gen.temp(), 0.3f);
    int64_t frames = 0;
    const auto ours = our_pcm(gen, dec, kShort, 8, 8, &frames);
    const auto ref = reference_pcm(c, kShort);
    ASSERT_GT(frames, 10);
    ASSERT_EQ(ours.size(), static_cast<size_t>(frames) * 1920);
    ASSERT_EQ(ours.size(), ref.size());
    EXPECT_EQ(std::memcmp(ours.data(), ref.data(), ref.size() * sizeof(float)), 0) << "SNR " << snr_db(ref, ours) << " dB";
    // The twin's audio is noise, but not silence.
    double s2 = 0;
    for (float v : ours) s2 += double(v) * v;
    EXPECT_GT(s2 / ours.size(), 1e-6);
}

TEST(PocketEngine, LongTextInChunksAndAVoiceEqualTheHelper) {
    kit();
    rtf::test::ScratchDir t("pocket-voice");
    PocketConfig c = config();
    c.speaker_file = write_voice(t.file("voice.wav"));
    PocketGenerator gen(c);
    MimiDecoder dec(gen);
    EXPECT_GT(gen.n_voice_rows(), 1);
    rtf::test::PhaseClock clock;
    const auto ours = our_pcm(gen, dec, kLong, 8, 8);
    clock.mark("our engines, long text");
    EXPECT_GT(gen.n_chunks(), 1);
    const auto ref = reference_pcm(c, kLong);
    clock.mark("the helper pipeline, long text");
    ASSERT_EQ(ours.size(), ref.size());
    EXPECT_EQ(std::memcmp(ours.data(), ref.data(), ref.size() * sizeof(float)), 0) << "SNR " << snr_db(ref, ours) << " dB";

    // The same file as a named voice on engines loaded without one (a kit's voices/NAME.wav):
    // the same PCM; the default voice after it is the model's own again.
    PocketConfig plain = config();
    PocketGenerator g2(plain);
    g2.add_voice("alt", c.speaker_file);
    MimiDecoder d2(g2);
    const auto alt = our_pcm(g2, d2, kLong, 8, 8, nullptr, "alt");
    clock.mark("our engines, named voice");
    ASSERT_EQ(alt.size(), ref.size());
    EXPECT_EQ(std::memcmp(alt.data(), ref.data(), ref.size() * sizeof(float)), 0);
    const auto own = our_pcm(g2, d2, kShort, 8, 8);
    const auto own_ref = reference_pcm(plain, kShort);
    clock.mark("the default voice after it, both sides");
    ASSERT_EQ(own.size(), own_ref.size());
    EXPECT_EQ(std::memcmp(own.data(), own_ref.data(), own.size() * sizeof(float)), 0);
    EXPECT_THROW(g2.start(kShort, "nobody"), rtf::Error);
}

TEST(PocketEngine, StreamedDecodingEqualsOneShotAndRunsRepeat) {
    PocketGenerator gen(config());
    MimiDecoder dec(gen);
    rtf::test::PhaseClock clock;
    const auto eight = our_pcm(gen, dec, kShort, 8, 8);
    const auto again = our_pcm(gen, dec, kShort, 8, 8);  // same engines, same seed: same audio
    clock.mark("8-frame chunks, twice");
    ASSERT_EQ(again.size(), eight.size());
    EXPECT_EQ(std::memcmp(again.data(), eight.data(), eight.size() * sizeof(float)), 0);
    const auto whole = our_pcm(gen, dec, kShort, 1000, 1000);
    const auto ones = our_pcm(gen, dec, kShort, 1, 1);
    const auto first2 = our_pcm(gen, dec, kShort, 2, 8);
    clock.mark("one shot, 1-frame and 2+8-frame chunks");
    ASSERT_EQ(whole.size(), eight.size());
    ASSERT_EQ(ones.size(), eight.size());
    ASSERT_EQ(first2.size(), eight.size());
    EXPECT_GE(snr_db(whole, eight), 60.0);
    EXPECT_GE(snr_db(whole, ones), 60.0);
    EXPECT_GE(snr_db(whole, first2), 60.0);
}

// Through the speak path (family.h): the pipeline's chunking and a second utterance on the same
// engines give the same PCM as a fresh engine set (the decoder restarts cold, the noise at the seed).
TEST(PocketSpeak, UtterancesOnOneEngineSetRepeatAndMatchTheEngines) {
    rtf::speak::SpeakConfig cfg = rtf::speak::default_config();
    cfg.models_dir = kit().root.string();
    cfg.text = kShort;
    cfg.llm.seed = 42;
    cfg.family.first_frames = cfg.family.frames = 8;
    rtf::speak::finalize(cfg);
    auto engines = rtf::speak::load_engines(cfg);
    ASSERT_TRUE(engines->family);
    auto run = [&] {
        std::vector<float> pcm;
        const auto r = rtf::speak::speak(*engines, cfg, [&](const rtf::pipe::Item &c) { pcm.insert(pcm.end(), c.pcm.begin(), c.pcm.end()); });
        EXPECT_EQ(r.family, "pocket-tts");
        EXPECT_EQ(static_cast<int64_t>(pcm.size()), r.family_units * 1920);
        return pcm;
    };
    const auto a = run(), b = run();
    PocketGenerator gen(config());
    MimiDecoder dec(gen);
    const auto direct = our_pcm(gen, dec, kShort, 8, 8);
    ASSERT_EQ(a.size(), direct.size());
    ASSERT_EQ(b.size(), direct.size());
    EXPECT_EQ(std::memcmp(a.data(), direct.data(), a.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(b.data(), direct.data(), b.size() * sizeof(float)), 0);
    cfg.prompt = "Hello";
    cfg.text.clear();
    EXPECT_THROW(rtf::speak::speak(*engines, cfg, [](const rtf::pipe::Item &) {}), rtf::Error);
}

TEST(PocketEngine, BadInputGetsClearErrors) {
    PocketConfig c = config();
    c.speaker_file = "/nonexistent/voice.wav";
    EXPECT_THROW(PocketGenerator{c}, rtf::Error);
    PocketGenerator gen(config());
    EXPECT_THROW(gen.start("   "), rtf::Error);
    PocketConfig m = config();
    m.mmproj_path = m.backbone_path;  // not an mmproj
    EXPECT_THROW(PocketGenerator{m}, rtf::Error);
}

}  // namespace
