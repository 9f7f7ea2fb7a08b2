// Twin generator without writing big files: random streams, fill rules, and the byte counts of a
// full-scale kit computed from the headers it would write (spec §1.1, within 3 %).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "twin/rng.h"
#include "twin/tensor-data.h"
#include "twin/twin.h"

using namespace rtf;
using namespace rtf::twin;
namespace m45 = rtf::gguf::minicpmo45;

TEST(Rng, BellHasUnitMomentsAndIsBounded) {
    Rng r(42);
    double s = 0, s2 = 0, mx = 0;
    const int n = 1 << 20;
    for (int i = 0; i < n; ++i) {
        const double x = r.bell();
        s += x;
        s2 += x * x;
        mx = std::max(mx, std::abs(x));
    }
    EXPECT_NEAR(s / n, 0.0, 0.01);
    EXPECT_NEAR(s2 / n, 1.0, 0.01);
    EXPECT_LT(mx, 3.47);
    EXPECT_GT(mx, 2.5);
}

TEST(Rng, StreamsDependOnSeedNameAndChunk) {
    EXPECT_NE(chunk_seed(0, "a", 0), chunk_seed(1, "a", 0));
    EXPECT_NE(chunk_seed(0, "a", 0), chunk_seed(0, "b", 0));
    EXPECT_NE(chunk_seed(0, "a", 0), chunk_seed(0, "a", 1));
    EXPECT_EQ(Rng(chunk_seed(3, "x", 2)).next(), Rng(chunk_seed(3, "x", 2)).next());
}

TEST(Fill, TtsRules) {
    TensorStream t{"head", GGML_TYPE_F32, {6, 3, 1, 1}, gguf::init_normal(0.1f)};
    t.init.last_col_special = true;
    t.init.last_col_value = 1.3f;
    t.init.dim0_offset = 3.0f;
    std::vector<float> v(18);
    fill_chunk(t, 0, 0, 0, 3, v.data());
    EXPECT_FLOAT_EQ(v[5], 1.3f);   // row 0, EOS column
    EXPECT_FLOAT_EQ(v[11], 0.0f);  // row 1, EOS column
    EXPECT_GT(v[0], 2.5f);         // dim 0 offset
    t.init.rows_nonzero = 1;
    fill_chunk(t, 0, 0, 0, 3, v.data());
    for (int i = 6; i < 18; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], 0.0f);
}

TEST(Kit, FullScaleSizesMatchTheOfficialBundle) {
    KitOptions o;
    o.scale = Scale::full;
    o.dims = m45::dims_for_scale(Scale::full);
    o.dry_run = true;
    const auto r = make_kit(o);
    const std::map<std::string, uint64_t> spec = {
        {"tts", 1157244416},       {"projector", 14948640},  {"encoder", 151339008},  {"flow_matching", 458250240},
        {"flow_extra", 13663328},  {"hifigan2", 83242816},   {"prompt_cache", 211613152}};
    ASSERT_EQ(r.files.size(), 9u);  // the speak path's 8 + the audio encoder (no official size listed)
    for (const auto &f : r.files) {
        const auto it = spec.find(gguf::role_name(f.role));
        if (it == spec.end()) continue;
        const double rel = (double(f.bytes) - double(it->second)) / double(it->second);
        std::printf("%-14s twin %12llu  official %12llu  %+.4f %%\n", it->first.c_str(),
                    static_cast<unsigned long long>(f.bytes), static_cast<unsigned long long>(it->second), 100 * rel);
        EXPECT_LT(std::abs(rel), 0.03) << it->first;
    }
    // The LLM: the official bundle lists its Q4_K_M file.
    o.type = WeightType::q4_k_m;
    o.roles = {Role::llm};
    const auto q = make_kit(o);
    const double rel = (double(q.files[0].bytes) - 5026714400.0) / 5026714400.0;
    std::printf("llm q4_k_m     twin %12llu  official   5026714400  %+.4f %%\n",
                static_cast<unsigned long long>(q.files[0].bytes), 100 * rel);
    EXPECT_LT(std::abs(rel), 0.03);
}

TEST(Kit, OptionsAreValidated) {
    KitOptions o;
    EXPECT_THROW(o.validate(), Error);  // no --out
    o.out_dir = "x";
    EXPECT_NO_THROW(o.validate());
    o.family = "qwen3tts";
    EXPECT_THROW(o.validate(), Error);
    o.family = "minicpmo45";
    o.dims.llm.n_head_kv = 3;
    try {
        o.validate();
        FAIL();
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("--llm-kv-heads"), std::string::npos);
    }
    o.dims = m45::dims_for_scale(Scale::tiny);
    o.dims.tts.n_embd = 96;  // projector output no longer matches
    EXPECT_THROW(o.validate(), Error);
}

TEST(Kit, MissingVocabularyIsASetupError) {
    KitOptions o;
    o.dry_run = true;
    o.roles = {Role::llm};
    o.vocab_path = "/nonexistent/vocab.gguf";
    try {
        make_kit(o);
        FAIL();
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Setup);
        EXPECT_NE(std::string(e.what()).find("--vocab"), std::string::npos);
    }
}
