// The audio encoder on a tiny twin file (rtf twin's apm layout, 2 x 64 -> 128): loading,
// the whole chain against the plain loops (apm-reference.h) over two streamed chunks, the
// streaming bookkeeping (offsets, the restart after 30 s, reset, streaming off), shapes per
// frame length, and errors that leave the state as it was.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <ggml.h>

#include "apm-reference.h"
#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/apm/apm-blocks.h"
#include "models/apm/apm-encoder.h"
#include "models/gguf/mapped-gguf.h"
#include "models/gguf/minicpmo45-layout.h"
#include "twin/twin.h"

using namespace rtf;
using namespace rtf::apm;
namespace m45 = rtf::gguf::minicpmo45;

namespace {

std::string write_tiny_apm(const rtf::test::ScratchDir &t, uint64_t seed = 0) {
    const auto layout = m45::apm_layout(m45::dims_for_scale(m45::Scale::tiny).apm);
    const std::string p = t.file(layout.file_name);
    twin::write_layout(layout, p, seed, "", false, {});
    return p;
}

std::vector<float> tone(size_t n, double hz, uint32_t seed) {
    std::mt19937 g(seed);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 0.4f * static_cast<float>(std::sin(2 * M_PI * hz * i / 16000.0)) + nd(g);
    return x;
}

// A tensor of the file as F32 values (F16 dequantised).
std::vector<float> f32(const gguf::MappedGguf &f, const std::string &name) {
    const auto t = f.require(name, {GGML_TYPE_F32, GGML_TYPE_F16});
    const size_t n = static_cast<size_t>(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
    std::vector<float> v(n);
    if (t.type == GGML_TYPE_F32) std::memcpy(v.data(), t.data, n * sizeof(float));
    else ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t *>(t.data), v.data(), static_cast<int64_t>(n));
    return v;
}

}  // namespace

TEST(ApmModel, TinyTwinLoadsWithTheReferenceWidths) {
    rtf::test::ScratchDir t("apm-model");
    const ApmModel m(write_tiny_apm(t));
    EXPECT_EQ(m.hparams().n_layer, 2);
    EXPECT_EQ(m.hparams().d, 64);
    EXPECT_EQ(m.hparams().n_head, 2);
    EXPECT_EQ(m.hparams().n_ff, 256);
    EXPECT_EQ(m.hparams().n_ctx, 1500);
    EXPECT_EQ(m.hparams().n_out, 128);
    EXPECT_EQ(m.filters().size(), 80u * 201u);
    EXPECT_GT(m.weight_bytes(), 0u);
    EXPECT_THROW(ApmModel(t.file("nope.gguf")), Error);
}

TEST(ApmModel, WholeChainOverTwoChunksEqualsPlainLoops) {
    rtf::test::ScratchDir t("apm-model");
    const std::string path = write_tiny_apm(t, 3);
    const ApmModel m(path);
    ApmConfig cfg;
    cfg.kv_type = GGML_TYPE_F32;
    cfg.n_threads = 2;
    ApmEncoder enc(m, cfg);

    const gguf::MappedGguf f(path);
    const int64_t d = 64, H = 2, n_mel = 80;
    std::vector<ref::Layer> layers(2);
    for (int i = 0; i < 2; ++i) {
        const std::string p = "encoder.blocks." + std::to_string(i) + ".";
        auto &l = layers[static_cast<size_t>(i)];
        l.ln1_w = f32(f, p + "attn_ln.weight"), l.ln1_b = f32(f, p + "attn_ln.bias");
        l.q_w = f32(f, p + "attn.query.weight"), l.q_b = f32(f, p + "attn.query.bias");
        l.k_w = f32(f, p + "attn.key.weight");
        l.v_w = f32(f, p + "attn.value.weight"), l.v_b = f32(f, p + "attn.value.bias");
        l.o_w = f32(f, p + "attn.out.weight"), l.o_b = f32(f, p + "attn.out.bias");
        l.ln2_w = f32(f, p + "mlp_ln.weight"), l.ln2_b = f32(f, p + "mlp_ln.bias");
        l.fc1_w = f32(f, p + "mlp.0.weight"), l.fc1_b = f32(f, p + "mlp.0.bias");
        l.fc2_w = f32(f, p + "mlp.2.weight"), l.fc2_b = f32(f, p + "mlp.2.bias");
        l.n_ff = 256;
    }
    const auto pos = f32(f, "encoder.positional_embedding");
    std::vector<std::vector<float>> kc(2), vc(2);
    int64_t n_past = 0;
    // 0.5 s then 0.3 s: 25 then 15 tokens; the second chunk's positions start at 25.
    for (size_t n : {8000u, 4800u}) {
        const auto x = tone(n, 300.0 + static_cast<double>(n) / 40.0, static_cast<uint32_t>(n));
        const ApmOutput got = enc.encode_pcm(x);
        const auto mel = ref::log_mel(x, m.filters(), n_mel);
        int64_t T = 0;
        auto h = ref::conv_front(mel, n_mel, static_cast<int64_t>(n / 160), f32(f, "encoder.conv1.weight"),
                                 f32(f, "encoder.conv1.bias"), f32(f, "encoder.conv2.weight"), f32(f, "encoder.conv2.bias"), d, &T);
        for (int64_t tt = 0; tt < T; ++tt)
            for (int64_t i = 0; i < d; ++i) h[static_cast<size_t>(tt * d + i)] += pos[static_cast<size_t>((n_past + tt) * d + i)];
        for (size_t li = 0; li < 2; ++li) h = ref::encoder_layer(h, T, d, H, layers[li], kc[li], vc[li], 1e-5f);
        int64_t rows = 0;
        const auto want = ref::project_pool(h, T, d, f32(f, "encoder.ln_post.weight"), f32(f, "encoder.ln_post.bias"),
                                            f32(f, "audio_projector.linear1.weight"), f32(f, "audio_projector.linear1.bias"), 128,
                                            f32(f, "audio_projector.linear2.weight"), f32(f, "audio_projector.linear2.bias"), 128, &rows);
        EXPECT_EQ(got.n_tokens, T);
        EXPECT_EQ(got.n_past, n_past);
        EXPECT_EQ(got.n_rows, rows);
        EXPECT_EQ(got.n_embd, 128);
        EXPECT_LT(ref::rel_err(got.data, want), 2e-2) << n;  // F16 weights and im2col, ggml's GELU
        n_past += T;
    }
    EXPECT_EQ(enc.n_past(), 40);
}

TEST(ApmEncoder, StreamingOffsetsRestartAfter30SecondsAndReset) {
    rtf::test::ScratchDir t("apm-model");
    const ApmModel m(write_tiny_apm(t));
    ApmEncoder enc(m, {});
    const auto second = tone(16000, 440.0, 1);
    ApmOutput first;
    for (int i = 0; i < 31; ++i) {
        const ApmOutput o = enc.encode_pcm(second);
        EXPECT_EQ(o.n_rows, 10) << i;  // 1 s -> 100 mel frames -> 50 tokens -> 10 rows
        EXPECT_EQ(o.n_embd, 128);
        EXPECT_EQ(o.n_mel_frames, 100);
        EXPECT_EQ(o.n_past, i < 30 ? 50 * i : 0) << i;
        EXPECT_EQ(o.cache_reset, i == 30) << i;
        for (float v : o.data) ASSERT_TRUE(std::isfinite(v));
        if (i == 0) first = o;
        if (i == 1) {
            EXPECT_GT(ref::rel_err(o.data, first.data), 1e-3);  // attends to the first second too
        }
        if (i == 30) {
            EXPECT_LT(ref::rel_err(o.data, first.data), 1e-5);  // the restart sees what the first saw
        }
    }
    enc.reset();
    EXPECT_EQ(enc.n_past(), 0);
    EXPECT_LT(ref::rel_err(enc.encode_pcm(second).data, first.data), 1e-5);

    ApmConfig off;
    off.streaming = false;
    ApmEncoder lone(m, off);
    for (int i = 0; i < 3; ++i) {
        const ApmOutput o = lone.encode_pcm(second);
        EXPECT_EQ(o.n_past, 0);
        EXPECT_LT(ref::rel_err(o.data, first.data), 1e-5);
    }
}

TEST(ApmEncoder, FrameLengthsShapesAndErrors) {
    rtf::test::ScratchDir t("apm-model");
    const ApmModel m(write_tiny_apm(t));
    ApmEncoder enc(m, {});
    // 100 ms -> 10 mel -> 5 tokens -> 1 row; 250 ms is padded to 300 ms -> 15 tokens -> 3 rows.
    EXPECT_EQ(enc.encode_pcm(tone(1600, 200.0, 2)).n_rows, 1);
    EXPECT_EQ(enc.encode_pcm(tone(4000, 200.0, 3)).n_rows, 3);
    EXPECT_EQ(enc.encode_pcm(tone(10, 200.0, 4)).n_rows, 1);  // padded to 100 ms
    const int64_t before = enc.n_past();
    Mel short_mel;
    short_mel.n_mel = 80;
    short_mel.n_frames = 8;  // 4 tokens: less than one pooling window
    short_mel.data.assign(80 * 8, 0.0f);
    EXPECT_THROW(enc.encode(short_mel), Error);
    Mel wrong = short_mel;
    wrong.n_mel = 40;
    wrong.n_frames = 100;
    wrong.data.assign(40 * 100, 0.0f);
    EXPECT_THROW(enc.encode(wrong), Error);
    EXPECT_EQ(enc.n_past(), before);  // errors leave the stream as it was
    ApmConfig bad;
    bad.n_threads = 0;
    EXPECT_THROW(ApmEncoder(m, bad), Error);
}

// A load-time weight type converts the blocks' and the projector's matrices only; its embeddings
// stay close to the file's (bf16 > q8_0 > q4_0, each above a bound); an unknown type names the flag.
TEST(ApmModel, WeightTypesConvertTheMatricesAndStayClose) {
    rtf::test::ScratchDir t("apm-model");
    const std::string path = write_tiny_apm(t);
    const ApmModel ref(path);
    auto embed = [&](const ApmModel &m) {
        ApmEncoder enc(m, {});
        auto a = enc.encode_pcm(tone(16000, 220.0, 5)).data;
        auto b = enc.encode_pcm(tone(16000, 330.0, 6)).data;
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    const auto want = embed(ref);
    double prev = 1e9;
    for (const auto &[type, min_db] : std::vector<std::pair<std::string, double>>{{"bf16", 30}, {"q8_0", 25}, {"q4_0", 5}}) {
        const ApmModel m(path, type);
        EXPECT_EQ(m.weight_type(), type);
        EXPECT_EQ(m.weights().layers[0].fc1_w->type, ggml_type(type == "bf16" ? GGML_TYPE_BF16 : type == "q8_0" ? GGML_TYPE_Q8_0 : GGML_TYPE_Q4_0));
        EXPECT_EQ(m.weights().conv1_w->type, ref.weights().conv1_w->type) << "convolutions stay as stored";
        const auto got = embed(m);
        ASSERT_EQ(got.size(), want.size());
        double sig = 0, err = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            sig += static_cast<double>(want[i]) * want[i];
            err += static_cast<double>(want[i] - got[i]) * (want[i] - got[i]);
        }
        const double db = 10 * std::log10(sig / std::max(err, 1e-30));
        EXPECT_GT(db, min_db) << type;
        EXPECT_LT(db, prev + 1e-9) << type << ": fewer bits, not closer";
        prev = db;
    }
    try {
        ApmModel bad(path, "q2_k");
        ADD_FAILURE() << "no error";
    } catch (const Error &e) {
        // In the engine's terms: the setting by its knob name, no CLI flag (the CLI adds the "--").
        EXPECT_EQ(e.setting(), "apm-weight-type") << e.what();
        EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
    }
}
