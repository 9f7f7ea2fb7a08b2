// The Qwen3-TTS twin (qwen3tts-layout.h) is what the pinned tree loads and runs: rtf inspect's check
// passes on it, libllama loads the talker (IMROPE, the codec head's logit padding, the suppressed
// codec rows), libmtmd the mmproj, and its helper pipeline (what llama-tts drives) makes 1920
// samples a frame from greedy code0s. No engine of ours yet: this pins the layout.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <llama.h>
#include <mtmd-helper.h>
#include <mtmd.h>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/gguf/layout-check.h"
#include "speak/kit.h"
#include "twin/twin.h"

namespace {

TEST(Qwen3Twin, LoadsAndRunsThroughTheHelperPipeline) {
    rtf::test::ScratchDir dir("qwen3");
    rtf::twin::KitOptions o;
    o.family = "qwen3-tts";
    o.out_dir = dir.dir.string();
    o.roles.assign(rtf::gguf::mtmd_family_roles.begin(), rtf::gguf::mtmd_family_roles.end());
    rtf::twin::make_kit(o);
    const std::string bb = dir.file("qwen3-tts.gguf"), mm = dir.file("mmproj-qwen3-tts.gguf");
    EXPECT_TRUE(rtf::gguf::check_layout(bb, rtf::gguf::Role::backbone).empty());
    EXPECT_TRUE(rtf::gguf::check_layout(mm, rtf::gguf::Role::mmproj).empty());
    const auto kit = rtf::speak::resolve_kit(dir.dir.string());
    EXPECT_EQ(kit.family, "qwen3-tts");
    EXPECT_THROW(rtf::speak::require_minicpmo45(kit, "this test"), rtf::Error);

    auto mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(bb.c_str(), mp);
    ASSERT_NE(model, nullptr);
    auto cp = llama_context_default_params();
    cp.embeddings = true;
    cp.n_ctx = 1024;
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context *lctx = llama_init_from_model(model, cp);
    ASSERT_NE(lctx, nullptr);
    auto mparams = mtmd_context_params_default();
    mparams.use_gpu = false;
    mparams.n_threads = 2;
    mparams.print_timings = false;
    mtmd_context *mctx = mtmd_init_from_file(mm.c_str(), model, mparams);
    ASSERT_NE(mctx, nullptr);
    EXPECT_EQ(mtmd_gen_audio_get_info(mctx).type, MTMD_GEN_AUDIO_TYPE_QWEN3TTS);
    mtmd_helper_gen_audio *gen = mtmd_helper_gen_audio_init(lctx, mctx);
    const std::string text = "Hello world, this is a test.";
    mtmd_helper_gen_audio_inp in{};
    in.prompt = text.c_str();
    in.prompt_len = text.size();
    in.top_k = 50;
    in.top_p = 1.0f;
    in.seed = 42;
    in.out_type = MTMD_HELPER_GEN_AUDIO_OUTTYPE_PCM;
    ASSERT_EQ(mtmd_helper_gen_audio_set_input(gen, &in), 0);
    int r;
    while ((r = mtmd_helper_gen_audio_step_prompt(gen, 512)) > 0) {}
    ASSERT_EQ(r, 0);
    // The codec block is the vocabulary's last 3072 rows; text logits are -inf (the head is 3072 wide).
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model)), n_text = n_vocab - 3072;
    auto greedy = [&] {
        const float *lg = llama_get_logits_ith(lctx, -1);
        EXPECT_TRUE(std::isinf(lg[0]) && lg[0] < 0);
        int32_t best = n_text;
        for (int32_t i = n_text; i < n_text + 2048; ++i)
            if (lg[i] > lg[best]) best = i;
        return best;
    };
    const float *h = llama_get_embeddings_ith(lctx, -1);
    int frames = 0;
    bool stop = false;
    while (!stop && frames < 20) {
        const float *next = nullptr;
        ASSERT_EQ(mtmd_helper_gen_audio_step_gen(gen, greedy(), h, &next, &stop), 0);
        if (!next) break;
        h = next;
        ++frames;
    }
    int32_t sr = 0;
    const char *data = nullptr;
    size_t len = 0;
    int64_t ns = 0;
    ASSERT_EQ(mtmd_helper_gen_audio_get_output(gen, &sr, &data, &len, &ns), 0);
    EXPECT_EQ(frames, 20);
    EXPECT_EQ(sr, 24000);
    EXPECT_EQ(ns, int64_t{frames} * 1920);
    double s2 = 0;
    for (int64_t i = 0; i < ns; ++i) s2 += double(reinterpret_cast<const float *>(data)[i]) * reinterpret_cast<const float *>(data)[i];
    EXPECT_GT(s2, 0.0);
    mtmd_helper_gen_audio_free(gen);
    mtmd_free(mctx);
    llama_free(lctx);
    llama_model_free(model);
}

}  // namespace
