// The Qwen3-TTS twin (qwen3tts-layout.h) is what the pinned tree loads and runs: rtf inspect's check
// passes on it, libllama loads the talker (IMROPE, the codec head's logit padding, the suppressed
// codec rows), libmtmd the mmproj, and its helper pipeline (what llama-tts drives) makes 1920
// samples a frame from greedy code0s; our engines (qwen3tts-engine.h) equal that pipeline bit for
// bit, with and without a speaker reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <llama.h>
#include <mtmd-helper.h>
#include <mtmd.h>

#include "common/phase-clock.h"
#include "common/scratch-dir.h"
#include "core/error.h"
#include "core/wav.h"
#include "models/gen-audio/qwen3tts-engine.h"
#include "models/gguf/layout-check.h"
#include "speak/kit.h"
#include "twin/twin.h"

namespace {

struct Kit {
    rtf::test::ScratchDir dir{"qwen3"};
    Kit() {
        rtf::twin::KitOptions o;
        o.family = "qwen3-tts";
        o.out_dir = dir.dir.string();
        o.roles.assign(rtf::gguf::mtmd_family_roles.begin(), rtf::gguf::mtmd_family_roles.end());
        rtf::twin::make_kit(o);
    }
};
const Kit &kit() {
    static Kit k;
    return k;
}

// Greedy code 0 over the codec block's first 2048 rows (the rows the converter leaves samplable, EOS aside).
int32_t greedy_code0(const float *lg, int32_t n_vocab) {
    const int32_t n_text = n_vocab - 3072;
    int32_t best = n_text;
    for (int32_t i = n_text; i < n_text + 2048; ++i)
        if (lg[i] > lg[best]) best = i;
    return best;
}

// llama.cpp's helper pipeline (what llama-tts drives) with greedy code 0s: `frames` frames, its PCM.
std::vector<float> helper_pcm(const std::string &bb, const std::string &mm, const std::string &text, int frames,
                              bool check_logits = false, const std::string &speaker = "") {
    auto mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(bb.c_str(), mp);
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
    mtmd_context *mctx = mtmd_init_from_file(mm.c_str(), model, mparams);
    EXPECT_NE(mctx, nullptr);
    EXPECT_EQ(mtmd_gen_audio_get_info(mctx).type, MTMD_GEN_AUDIO_TYPE_QWEN3TTS);
    mtmd_helper_gen_audio *gen = mtmd_helper_gen_audio_init(lctx, mctx);
    mtmd_bitmap *voice = nullptr;
    if (!speaker.empty()) voice = mtmd_helper_bitmap_init_from_file(mctx, speaker.c_str(), false, {}).bitmap;
    mtmd_helper_gen_audio_inp in{};
    in.speaker_ref = voice;
    in.prompt = text.c_str();
    in.prompt_len = text.size();
    in.top_k = 40;  // llama-tts's sampling top-k / top-p, which it hands to the predictor (Qwen3Config's defaults)
    in.top_p = 0.95f;
    in.seed = 42;
    in.out_type = MTMD_HELPER_GEN_AUDIO_OUTTYPE_PCM;
    EXPECT_EQ(mtmd_helper_gen_audio_set_input(gen, &in), 0);
    int r;
    while ((r = mtmd_helper_gen_audio_step_prompt(gen, 512)) > 0) {}
    EXPECT_EQ(r, 0);
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const float *h = llama_get_embeddings_ith(lctx, -1);
    int made = 0;
    bool stop = false;
    while (!stop && made < frames) {
        const float *lg = llama_get_logits_ith(lctx, -1);
        // The codec head is 3072 wide: the text rows' logits are -inf.
        if (check_logits) { EXPECT_TRUE(std::isinf(lg[0]) && lg[0] < 0); }
        const float *next = nullptr;
        EXPECT_EQ(mtmd_helper_gen_audio_step_gen(gen, greedy_code0(lg, n_vocab), h, &next, &stop), 0);
        if (!next) break;
        h = next;
        ++made;
    }
    EXPECT_EQ(made, frames);
    int32_t sr = 0;
    const char *data = nullptr;
    size_t len = 0;
    int64_t ns = 0;
    EXPECT_EQ(mtmd_helper_gen_audio_get_output(gen, &sr, &data, &len, &ns), 0);
    EXPECT_EQ(sr, 24000);
    std::vector<float> pcm(reinterpret_cast<const float *>(data), reinterpret_cast<const float *>(data) + ns);
    mtmd_helper_gen_audio_free(gen);
    if (voice) mtmd_bitmap_free(voice);
    mtmd_free(mctx);
    llama_free(lctx);
    llama_model_free(model);
    return pcm;
}

TEST(Qwen3Twin, LoadsAndRunsThroughTheHelperPipeline) {
    const auto &dir = kit().dir;
    const std::string bb = dir.file("qwen3-tts.gguf"), mm = dir.file("mmproj-qwen3-tts.gguf");
    EXPECT_TRUE(rtf::gguf::check_layout(bb, rtf::gguf::Role::backbone).empty());
    EXPECT_TRUE(rtf::gguf::check_layout(mm, rtf::gguf::Role::mmproj).empty());
    const auto kit = rtf::speak::resolve_kit(dir.dir.string());
    EXPECT_EQ(kit.family, "qwen3-tts");
    EXPECT_THROW(rtf::speak::require_minicpmo45(kit, "this test"), rtf::Error);

    const auto pcm = helper_pcm(bb, mm, "Hello world, this is a test.", 20, true);
    EXPECT_EQ(pcm.size(), size_t{20} * 1920);
    double s2 = 0;
    for (float x : pcm) s2 += double(x) * x;
    EXPECT_GT(s2, 0.0);
}

// Our generator + streamed code2wav against the helper, the same greedy code 0s: 80 frames cross a
// 72-frame window, decoded 24 frames a call (each call decodes its window again from the window's
// start state: 24, 48, 72, then 8 in the next window) and all at once.
TEST(Qwen3Engine, EqualsTheHelperPipelineBitForBit) {
    using rtf::gen_audio::Code2Wav;
    using rtf::gen_audio::Qwen3Config;
    using rtf::gen_audio::Qwen3Frame;
    using rtf::gen_audio::Qwen3Generator;
    const auto &dir = kit().dir;
    Qwen3Config c;
    c.backbone_path = dir.file("qwen3-tts.gguf");
    c.mmproj_path = dir.file("mmproj-qwen3-tts.gguf");
    c.placement.device = "CPU";
    c.placement.n_threads = c.placement.n_threads_batch = 2;
    c.seed = 42;
    c.max_frames = 80;
    Qwen3Generator gen(c);
    gen.set_picker(greedy_code0);
    Code2Wav dec(gen);
    const std::string text = "Hello world, this is a test.";
    auto ours = [&](size_t every) {
        gen.start(text);
        dec.reset();
        std::vector<int32_t> buf;
        std::vector<float> pcm;
        Qwen3Frame f;
        while (gen.next(f)) {
            EXPECT_EQ(f.codes.size(), size_t{16});
            buf.insert(buf.end(), f.codes.begin(), f.codes.end());
            if (buf.size() / 16 >= every) {
                const auto p = dec.decode(buf.data(), buf.size() / 16);
                pcm.insert(pcm.end(), p.begin(), p.end());
                buf.clear();
            }
        }
        const auto p = dec.decode(buf.data(), buf.size() / 16);
        pcm.insert(pcm.end(), p.begin(), p.end());
        return pcm;
    };
    rtf::test::PhaseClock clock;
    const auto chunks = ours(24);
    clock.mark("ours, 24 frames a call");
    const auto whole = ours(1000);
    clock.mark("ours, one call");
    const auto ref = helper_pcm(c.backbone_path, c.mmproj_path, text, 80);
    clock.mark("the helper pipeline");
    ASSERT_EQ(ref.size(), size_t{80} * 1920);
    ASSERT_EQ(chunks.size(), ref.size());
    ASSERT_EQ(whole.size(), ref.size());
    EXPECT_EQ(std::memcmp(whole.data(), ref.data(), ref.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(chunks.data(), ref.data(), ref.size() * sizeof(float)), 0);
}

}  // namespace

namespace {

// A speaker reference: the ECAPA encoder's x-vector row (+ <tts_pad>) after the think rows, as the
// helper builds it; the PCM equals the helper's with the same reference, and differs from the PCM
// without one (the row reaches the talker).
TEST(Qwen3Engine, SpeakerReferenceEqualsTheHelper) {
    using namespace rtf::gen_audio;
    const auto &dir = kit().dir;
    const std::string voice = dir.file("voice.wav");
    {
        std::vector<float> s(24000);
        for (size_t i = 0; i < s.size(); ++i) s[i] = 0.25f * std::sin(2 * M_PI * (200 + 300.0 * i / 24000) * i / 24000);
        rtf::write_wav(voice, s, 24000);
    }
    Qwen3Config c;
    c.backbone_path = dir.file("qwen3-tts.gguf");
    c.mmproj_path = dir.file("mmproj-qwen3-tts.gguf");
    c.placement.device = "CPU";
    c.placement.n_threads = c.placement.n_threads_batch = 2;
    c.max_frames = 12;
    const std::string text = "A voice to clone.";
    auto ours = [&](const std::string &spk) {
        c.speaker_file = spk;
        Qwen3Generator gen(c);
        gen.set_picker(greedy_code0);
        Code2Wav dec(gen);
        gen.start(text);
        std::vector<int32_t> buf;
        Qwen3Frame f;
        while (gen.next(f)) buf.insert(buf.end(), f.codes.begin(), f.codes.end());
        return std::make_pair(dec.decode(buf.data(), buf.size() / 16), gen.n_prompt_rows());
    };
    rtf::test::PhaseClock clock;
    const auto [with, rows_with] = ours(voice);
    clock.mark("ours with the reference");
    const auto [without, rows_without] = ours("");
    clock.mark("ours without");
    EXPECT_EQ(rows_with, rows_without + 1);
    const auto ref = helper_pcm(c.backbone_path, c.mmproj_path, text, 12, false, voice);
    clock.mark("the helper pipeline with the reference");
    ASSERT_EQ(with.size(), ref.size());
    EXPECT_EQ(std::memcmp(with.data(), ref.data(), ref.size() * sizeof(float)), 0);
    ASSERT_EQ(without.size(), with.size());
    EXPECT_NE(std::memcmp(without.data(), with.data(), with.size() * sizeof(float)), 0);
    {  // the same file as a named voice (a kit's voices/NAME.wav): the same PCM, and back to the default
        c.speaker_file.clear();
        Qwen3Generator gen(c);
        gen.set_picker(greedy_code0);
        gen.add_voice("alt", voice);
        EXPECT_EQ(gen.voice_names(), (std::vector<std::string>{"default", "alt"}));
        Code2Wav dec(gen);
        auto speak_with = [&](const std::string &v) {
            gen.start(text, v);
            dec.reset();
            std::vector<int32_t> buf;
            Qwen3Frame f;
            while (gen.next(f)) buf.insert(buf.end(), f.codes.begin(), f.codes.end());
            return dec.decode(buf.data(), buf.size() / 16);
        };
        const auto alt = speak_with("alt"), dflt = speak_with("default");
        ASSERT_EQ(alt.size(), with.size());
        EXPECT_EQ(std::memcmp(alt.data(), with.data(), with.size() * sizeof(float)), 0);
        EXPECT_EQ(std::memcmp(dflt.data(), without.data(), without.size() * sizeof(float)), 0);
        EXPECT_THROW(gen.start(text, "nobody"), rtf::Error);
        EXPECT_THROW(gen.add_voice("alt", voice), rtf::Error);
    }

    c.speaker_file = dir.file("no-such.wav");
    EXPECT_THROW(Qwen3Generator g(c), rtf::Error);
    c.speaker_file = dir.file("qwen3-tts.gguf");  // not audio
    try {
        Qwen3Generator g(c);
        ADD_FAILURE() << "a GGUF taken as a voice";
    } catch (const rtf::Error &e) {
        EXPECT_NE(std::string(e.what()).find("is not an audio file"), std::string::npos) << e.what();
    }
}

}  // namespace
