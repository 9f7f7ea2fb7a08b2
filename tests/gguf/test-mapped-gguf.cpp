// MappedGguf on small hand-written GGUF files: tensor data is read in place, the checked
// accessors name file, tensor, found and expected, and a short file fails before any data
// is read, naming the first tensor it cuts off.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/gguf/mapped-gguf.h"

using namespace rtf::gguf;
namespace fs = std::filesystem;

namespace {

// Three tensors in this order: a [4, 3] f32 (values 0..11), a [5] f16 (values 0.5 * i) and
// a [2, 2] f32 (values 100..103); metadata: an int, a string.
void write_file(const std::string &path) {
    ggml_init_params ip{16 * ggml_tensor_overhead() + 4096, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "test");
    gguf_set_val_u32(g, "test.block_count", 7);
    ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    ggml_set_name(a, "a.weight");
    for (int i = 0; i < 12; ++i) static_cast<float *>(a->data)[i] = static_cast<float>(i);
    ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 5);
    ggml_set_name(b, "b.bias");
    for (int i = 0; i < 5; ++i) static_cast<ggml_fp16_t *>(b->data)[i] = ggml_fp32_to_fp16(0.5f * static_cast<float>(i));
    ggml_tensor *c = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 2);
    ggml_set_name(c, "c.weight");
    for (int i = 0; i < 4; ++i) static_cast<float *>(c->data)[i] = 100.0f + static_cast<float>(i);
    for (ggml_tensor *t : {a, b, c}) gguf_add_tensor(g, t);
    ASSERT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);
}

// The message of the rtf::Error `f` throws; fails the test when it throws nothing or a
// non-Setup error.
std::string setup_error(const std::function<void()> &f) {
    try {
        f();
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.kind(), rtf::ErrorKind::Setup) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no rtf::Error thrown";
    return "";
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(MappedGguf, ReadsTensorDataInPlace) {
    rtf::test::ScratchDir t("mapped-gguf-test");
    const auto p = t.file("m.gguf");
    write_file(p);
    MappedGguf f(p);
    EXPECT_EQ(f.path(), p);
    EXPECT_EQ(f.header().tensors().size(), 3u);
    const auto a = f.require("a.weight", {GGML_TYPE_F32}, {4, 3});
    EXPECT_EQ(a.shape(), "[4, 3]");
    EXPECT_EQ(a.nbytes, 12 * sizeof(float));
    const auto *av = static_cast<const float *>(a.data);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(av[i], static_cast<float>(i));
    const auto b = f.require("b.bias", {GGML_TYPE_F32, GGML_TYPE_F16}, {5});
    EXPECT_EQ(b.type, GGML_TYPE_F16);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(ggml_fp16_to_fp32(static_cast<const ggml_fp16_t *>(b.data)[i]), 0.5f * static_cast<float>(i));
    const auto c = f.require("c.weight", {});  // any type, any shape
    EXPECT_EQ(static_cast<const float *>(c.data)[3], 103.0f);
    // The data pointers agree with the header's offsets, relative to one mapping.
    EXPECT_EQ(static_cast<const char *>(c.data) - static_cast<const char *>(a.data),
              static_cast<ptrdiff_t>(f.header().find_tensor("c.weight")->offset));
    EXPECT_FALSE(f.find("nope.weight").has_value());
    EXPECT_EQ(f.require_int("test.block_count"), 7);
    EXPECT_EQ(f.header().find_string("general.architecture").value_or(""), "test");
}

TEST(MappedGguf, CheckedAccessorsNameFileTensorFoundAndExpected) {
    rtf::test::ScratchDir t("mapped-gguf-test");
    const auto p = t.file("m.gguf");
    write_file(p);
    MappedGguf f(p);
    auto m = setup_error([&] { f.require("nope.weight", {GGML_TYPE_F32}); });
    EXPECT_TRUE(contains(m, p + ": missing tensor 'nope.weight'")) << m;
    m = setup_error([&] { f.require("b.bias", {GGML_TYPE_F32}); });
    EXPECT_TRUE(contains(m, p + ": tensor 'b.bias' has type f16, expected f32")) << m;
    m = setup_error([&] { f.require("a.weight", {GGML_TYPE_F32, GGML_TYPE_F16}, {3, 4}); });
    EXPECT_TRUE(contains(m, p + ": tensor 'a.weight' has shape [4, 3], expected [3, 4]")) << m;
    m = setup_error([&] { f.require("a.weight", {}, {4}); });  // a missing dim is 1, not "any"
    EXPECT_TRUE(contains(m, "has shape [4, 3], expected [4]")) << m;
    m = setup_error([&] { f.require_int("test.n_head"); });
    EXPECT_TRUE(contains(m, p) && contains(m, "'test.n_head'")) << m;
    m = setup_error([&] { f.require_int("general.architecture"); });
    EXPECT_TRUE(contains(m, "'general.architecture' is str, expected an integer")) << m;
}

TEST(MappedGguf, TruncatedFileNamesTheFirstCutTensor) {
    rtf::test::ScratchDir t("mapped-gguf-test");
    const auto p = t.file("m.gguf");
    write_file(p);
    MappedGguf whole(p);
    const auto &h = whole.header();
    EXPECT_FALSE(h.truncated());
    const uint64_t promised = h.expected_size();  // end of the last tensor (the file may pad past it)
    // Cut inside the f16 tensor: both it and the last tensor are cut; the first one is named.
    const uint64_t cut = h.data_offset() + h.find_tensor("b.bias")->offset + 2;
    const auto q = t.file("short.gguf");
    fs::copy_file(p, q);
    fs::resize_file(q, cut);
    auto m = setup_error([&] { MappedGguf f(q); });
    EXPECT_TRUE(contains(m, q + ": truncated")) << m;
    EXPECT_TRUE(contains(m, "tensor 'b.bias' is cut off")) << m;
    EXPECT_TRUE(contains(m, std::to_string(promised)) && contains(m, std::to_string(cut))) << m;
    // One byte short of the promise: only the last tensor.
    fs::resize_file(q, promised - 1);
    m = setup_error([&] { MappedGguf f(q); });
    EXPECT_TRUE(contains(m, "tensor 'c.weight' is cut off")) << m;
}

TEST(MappedGguf, UnusableFilesAreSetupErrorsNamingTheFile) {
    rtf::test::ScratchDir t("mapped-gguf-test");
    auto m = setup_error([&] { MappedGguf f(t.file("missing.gguf")); });
    EXPECT_TRUE(contains(m, "missing.gguf")) << m;
    const auto junk = t.file("junk.gguf");
    std::ofstream(junk) << "this is not a model\n";
    m = setup_error([&] { MappedGguf f(junk); });
    EXPECT_TRUE(contains(m, "junk.gguf") && contains(m, "not a GGUF file")) << m;
    const auto head = t.file("head.gguf");
    write_file(head);
    fs::resize_file(head, 40);  // inside the header
    m = setup_error([&] { MappedGguf f(head); });
    EXPECT_TRUE(contains(m, "head.gguf") && contains(m, "header unreadable")) << m;
    m = setup_error([&] { MappedGguf f(t.dir.string()); });
    EXPECT_TRUE(contains(m, "directory")) << m;
}
