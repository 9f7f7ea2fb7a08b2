// The layout check on small hand-written GGUF files: every kind of problem is found and named.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cstring>
#include <fstream>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/gguf/layout-check.h"

using namespace rtf::gguf;
namespace fs = std::filesystem;

namespace {

// Writes `layout` (small tensors only) with gguf's own writer, data all 0.5.
void write_small(const FileLayout &layout, const std::string &path) {
    size_t bytes = 0;
    for (const auto &t : layout.tensors) bytes += tensor_nbytes(t.type, t.ne) + 64;
    ggml_init_params ip{(layout.tensors.size() + 1) * ggml_tensor_overhead() + bytes + 1024, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    gguf_context *g = gguf_init_empty();
    for (const auto &k : layout.kvs) {
        if (const auto *s = std::get_if<std::string>(&k.value)) gguf_set_val_str(g, k.key.c_str(), s->c_str());
        if (const auto *u = std::get_if<uint32_t>(&k.value)) gguf_set_val_u32(g, k.key.c_str(), *u);
        if (const auto *a = std::get_if<std::vector<float>>(&k.value))
            gguf_set_arr_data(g, k.key.c_str(), GGUF_TYPE_FLOAT32, a->data(), a->size());
    }
    for (const auto &t : layout.tensors) {
        ggml_tensor *x = ggml_new_tensor(ctx, t.type, shape_dims(t.ne), t.ne.data());
        ggml_set_name(x, t.name.c_str());
        if (t.type == GGML_TYPE_F32) {
            for (int64_t i = 0; i < ggml_nelements(x); ++i) static_cast<float *>(x->data)[i] = 0.5f;
        } else {
            std::memset(x->data, 0, ggml_nbytes(x));
        }
        gguf_add_tensor(g, x);
    }
    ASSERT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);
}

FileLayout small_projector() { return minicpmo45::projector_layout({128, 64}); }

bool has(const std::vector<Problem> &ps, const std::string &kind, const std::string &subject) {
    for (const auto &p : ps)
        if (p.kind == kind && p.subject == subject) return true;
    return false;
}

}  // namespace

TEST(LayoutCheck, GoodFilePasses) {
    rtf::test::ScratchDir t("gguf-test");
    const auto p = t.file("MiniCPM-o-4_5-projector-F16.gguf");
    write_small(small_projector(), p);
    EXPECT_TRUE(check_layout(p).empty());
    EXPECT_NO_THROW(require_layout(p, Role::projector));
    GgufFile f(p);
    EXPECT_EQ(detect_role("x.gguf", &f), Role::projector);  // by content
    EXPECT_EQ(infer_dims(f, Role::projector).projector.n_in, 128);
}

TEST(LayoutCheck, MissingExtraShapeTypeAndKeyAreNamed) {
    rtf::test::ScratchDir t("gguf-test");
    auto l = small_projector();
    l.tensors.erase(l.tensors.begin() + 3);  // linear2.bias
    l.tensors[0].type = GGML_TYPE_F16;       // linear1.weight
    l.tensors[1].ne[0] = 63;                 // linear1.bias
    TensorSpec extra = l.tensors[2];
    extra.name = "linear3.weight";
    l.tensors.push_back(extra);
    l.kvs[0].value = std::string("llama");   // general.architecture
    const auto p = t.file("proj-projector.gguf");
    write_small(l, p);
    const auto ps = check_layout(p);
    EXPECT_TRUE(has(ps, "missing_tensor", "linear2.bias"));
    EXPECT_TRUE(has(ps, "type", "linear1.weight"));
    EXPECT_TRUE(has(ps, "shape", "linear1.bias"));
    EXPECT_TRUE(has(ps, "extra_tensor", "linear3.weight"));
    EXPECT_TRUE(has(ps, "key_value", "general.architecture"));
    EXPECT_EQ(ps.size(), 5u);
    for (const auto &pr : ps) {
        EXPECT_NE(pr.message().find(p), std::string::npos) << pr.message();
        if (!pr.subject.empty()) {
            EXPECT_NE(pr.message().find(pr.subject), std::string::npos) << pr.message();
        }
    }
    try {
        require_layout(p);
        FAIL() << "require_layout accepted a broken file";
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
        EXPECT_NE(std::string(e.what()).find("linear2.bias"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("5 problems"), std::string::npos);
    }
}

TEST(LayoutCheck, TruncatedFileNamesTheCutTensor) {
    rtf::test::ScratchDir t("gguf-test");
    const auto p = t.file("MiniCPM-o-4_5-projector-F16.gguf");
    write_small(small_projector(), p);
    const auto size = fs::file_size(p);
    fs::resize_file(p, size - 100);  // cuts into linear2.bias (the last tensor)
    const auto ps = check_layout(p);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].kind, "truncated");
    EXPECT_EQ(ps[0].subject, "linear2.bias");
    EXPECT_NE(ps[0].message().find(std::to_string(size - 100)), std::string::npos);
}

TEST(LayoutCheck, NonGgufAndMissingFiles) {
    rtf::test::ScratchDir t("gguf-test");
    const auto p = t.file("encoder.gguf");
    std::ofstream(p) << "this is not a model\n";
    const auto ps = check_layout(p);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].kind, "not_gguf");
    EXPECT_NE(ps[0].message().find("encoder.gguf"), std::string::npos);
    EXPECT_THROW(GgufFile{p}, rtf::Error);
    try {
        check_layout(t.file("nope.gguf"));
        FAIL();
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
        EXPECT_NE(std::string(e.what()).find("nope.gguf"), std::string::npos);
    }
    // A header cut short is a problem of the file, not a crash.
    const auto h = t.file("hifigan2.gguf");
    write_small(small_projector(), h);
    fs::resize_file(h, 40);
    const auto hs = check_layout(h);
    ASSERT_EQ(hs.size(), 1u);
    EXPECT_EQ(hs[0].kind, "bad_header");
}

TEST(LayoutCheck, RoleFromName) {
    EXPECT_EQ(detect_role("a/token2wav-gguf/encoder.gguf", nullptr), Role::encoder);
    EXPECT_EQ(detect_role("flow_matching.gguf", nullptr), Role::flow_matching);
    EXPECT_EQ(detect_role("flow_extra.gguf", nullptr), Role::flow_extra);
    EXPECT_EQ(detect_role("hifigan2.gguf", nullptr), Role::hifigan2);
    EXPECT_EQ(detect_role("prompt_cache.gguf", nullptr), Role::prompt_cache);
    EXPECT_EQ(detect_role("tts/MiniCPM-o-4_5-tts-F16.gguf", nullptr), Role::tts);
    EXPECT_EQ(detect_role("tts/MiniCPM-o-4_5-projector-F16.gguf", nullptr), Role::projector);
    EXPECT_EQ(detect_role("MiniCPM-o-4_5-Q4_K_M.gguf", nullptr), std::nullopt);  // needs the content
    EXPECT_EQ(detect_role("audio/MiniCPM-o-4_5-audio-F16.gguf", nullptr), Role::apm);
    EXPECT_EQ(detect_role("minicpmo-apm.gguf", nullptr), Role::apm);  // the converter's own name
    EXPECT_EQ(detect_role("vision/MiniCPM-o-4_5-vision-F16.gguf", nullptr), Role::vpm);
}

TEST(LayoutCheck, AudioEncoderKeysAreChecked) {
    rtf::test::ScratchDir t("gguf-test");
    FileLayout l = minicpmo45::apm_layout(minicpmo45::dims_for_scale(minicpmo45::Scale::tiny).apm);
    const auto good = t.file("good-audio-F16.gguf");
    write_small(l, good);
    for (const auto &p : check_layout(good)) ADD_FAILURE() << p.message();
    GgufFile f(good);
    EXPECT_EQ(detect_role("x.gguf", &f), Role::apm);  // by content (arch "whisper")
    EXPECT_EQ(infer_dims(f, Role::apm).apm.d, 64);
    // n_fft must be 201 (the mel code's bins), the filter bank n_mel x 201, d_model present.
    for (auto &k : l.kvs) {
        if (k.key == "n_fft") k.value = uint32_t{400};
        if (k.key == "filters") k.value = std::vector<float>(80 * 200, 0.1f);
    }
    l.kvs.erase(std::remove_if(l.kvs.begin(), l.kvs.end(), [](const KvSpec &k) { return k.key == "d_model"; }), l.kvs.end());
    const auto bad = t.file("bad-audio-F16.gguf");
    write_small(l, bad);
    const auto ps = check_layout(bad);
    EXPECT_TRUE(has(ps, "key_value", "n_fft"));
    EXPECT_TRUE(has(ps, "key_value", "filters"));
    EXPECT_TRUE(has(ps, "missing_key", "d_model"));
}

TEST(LayoutCheck, InspectDirectory) {
    rtf::test::ScratchDir t("gguf-test");
    fs::create_directories(t.dir / "tts");
    write_small(small_projector(), t.file("tts/MiniCPM-o-4_5-projector-F16.gguf"));
    auto r = inspect_path(t.dir.string());
    ASSERT_EQ(r.files.size(), 1u);
    EXPECT_EQ(r.files[0].role, "projector");
    EXPECT_EQ(r.n_problems(), 0u);
    std::ofstream(t.file("tts/junk.gguf")) << "junk";
    r = inspect_path(t.dir.string());
    EXPECT_EQ(r.n_problems(), 1u);
    EXPECT_THROW(inspect_path(t.file("missing-dir")), rtf::Error);
}
