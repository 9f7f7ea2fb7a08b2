// Layout tables of MiniCPM-o 4.5 (spec §1.3-1.9): tensor counts, shapes, types, scales.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "models/gguf/minicpmo45-layout.h"

using namespace rtf::gguf;
using namespace rtf::gguf::minicpmo45;

namespace {
const TensorSpec &get(const FileLayout &l, const std::string &name) {
    const auto *t = l.find(name);
    if (!t) throw std::runtime_error("no tensor " + name);
    return *t;
}
using NE = std::array<int64_t, 4>;
}  // namespace

TEST(Layout, FullScaleTensorCountsMatchSpec) {
    const Dims d = dims_for_scale(Scale::full);
    EXPECT_EQ(tts_layout(d.tts, WeightType::f16).tensors.size(), 193u);  // 20 x 9 + 2 + 11
    EXPECT_EQ(projector_layout(d.projector).tensors.size(), 4u);
    EXPECT_EQ(encoder_layout(d.encoder).tensors.size(), 206u);
    EXPECT_EQ(flow_matching_layout(d.flow_matching).tensors.size(), 394u);
    EXPECT_EQ(flow_extra_layout(d.flow_extra).tensors.size(), 5u);
    EXPECT_EQ(hifigan2_layout(d.hift).tensors.size(), 246u);
    EXPECT_EQ(prompt_cache_layout(d.prompt_cache).tensors.size(), 5u);
    EXPECT_EQ(llm_layout(d.llm, WeightType::f16).tensors.size(), 36u * 11u + 3u);
    // audio encoder: conv1/2 w+b, positions, 24 x 15 (no key bias), ln_post w+b, projector 4
    EXPECT_EQ(apm_layout(d.apm).tensors.size(), 5u + 24u * 15u + 2u + 4u);
    // vision encoder: resampler 18, patch w+b, positions, 27 x 16, post_ln w+b
    EXPECT_EQ(vpm_layout(d.vpm).tensors.size(), 18u + 3u + 27u * 16u + 2u);
}

TEST(Layout, VisionEncoderShapesAndTypesAsTheConverterWritesThem) {
    const Dims d = dims_for_scale(Scale::full);
    const auto v = vpm_layout(d.vpm);
    EXPECT_EQ(v.file_name, "vision/MiniCPM-o-4_5-vision-F16.gguf");
    EXPECT_EQ(get(v, "v.patch_embd.weight").ne, (NE{14, 14, 3, 1152}));
    EXPECT_EQ(get(v, "v.patch_embd.weight").type, GGML_TYPE_F16);
    EXPECT_EQ(get(v, "v.position_embd.weight").ne, (NE{1152, 4900, 1, 1}));
    EXPECT_EQ(get(v, "v.position_embd.weight").type, GGML_TYPE_F16);  // 2-D ".weight" -> F16
    EXPECT_EQ(get(v, "v.blk.26.ffn_down.weight").ne, (NE{1152, 4304, 1, 1}));  // HF fc1 under the swapped name
    EXPECT_EQ(get(v, "v.blk.26.ffn_up.weight").ne, (NE{4304, 1152, 1, 1}));
    EXPECT_EQ(get(v, "resampler.query").ne, (NE{4096, 64, 1, 1}));
    EXPECT_EQ(get(v, "resampler.query").type, GGML_TYPE_F32);
    EXPECT_EQ(get(v, "resampler.kv.weight").ne, (NE{1152, 4096, 1, 1}));
    EXPECT_EQ(get(v, "resampler.pos_embed_k").ne, (NE{4096, 4900, 1, 1}));
    EXPECT_EQ(get(v, "resampler.proj.weight").type, GGML_TYPE_F16);
    EXPECT_EQ(get(vpm_layout(dims_for_scale(Scale::cpu).vpm), "resampler.query").ne[0], 1024);  // the cpu LLM width
    EXPECT_EQ(get(vpm_layout(dims_for_scale(Scale::tiny).vpm), "v.position_embd.weight").ne, (NE{64, 4900, 1, 1}));
}

TEST(Layout, AudioEncoderShapesTypesAndKeys) {
    for (Scale s : {Scale::tiny, Scale::cpu, Scale::full}) {
        const Dims d = dims_for_scale(s);
        const auto a = apm_layout(d.apm);
        const int64_t w = s == Scale::tiny ? 64 : 1024;
        EXPECT_EQ(a.file_name, "audio/MiniCPM-o-4_5-audio-F16.gguf");
        EXPECT_EQ(get(a, "encoder.conv1.weight").ne, (NE{3, 80, w, 1})) << scale_name(s);
        EXPECT_EQ(get(a, "encoder.conv1.weight").type, GGML_TYPE_F16);
        EXPECT_EQ(get(a, "encoder.conv2.bias").ne, (NE{1, w, 1, 1}));  // [d, 1] in numpy
        EXPECT_EQ(get(a, "encoder.conv2.bias").type, GGML_TYPE_F32);
        EXPECT_EQ(get(a, "encoder.positional_embedding").ne, (NE{w, 1500, 1, 1}));  // 30 s at every scale
        EXPECT_EQ(get(a, "encoder.positional_embedding").type, GGML_TYPE_F32);
        EXPECT_EQ(a.find("encoder.blocks.0.attn.key.bias"), nullptr);
        EXPECT_EQ(get(a, "encoder.blocks.1.attn.query.weight").type, GGML_TYPE_F16);
        EXPECT_EQ(get(a, "encoder.blocks.1.mlp_ln.bias").type, GGML_TYPE_F32);
        // The projector ends in the LLM width.
        EXPECT_EQ(get(a, "audio_projector.linear2.weight").ne[1], d.llm.n_embd) << scale_name(s);
        bool filters = false;
        for (const auto &k : a.kvs)
            if (k.key == "filters") {
                filters = true;
                EXPECT_EQ(std::get<std::vector<float>>(k.value).size(), 80u * 201u);
            }
        EXPECT_TRUE(filters);
    }
    const Dims full = dims_for_scale(Scale::full);
    const auto a = apm_layout(full.apm);
    EXPECT_EQ(get(a, "encoder.blocks.23.mlp.0.weight").ne, (NE{1024, 4096, 1, 1}));
    EXPECT_EQ(get(a, "audio_projector.linear1.weight").ne, (NE{1024, 4096, 1, 1}));
    EXPECT_EQ(get(a, "audio_projector.linear2.weight").ne, (NE{4096, 4096, 1, 1}));
}

TEST(Layout, NamesAreUnique) {
    const Dims d = dims_for_scale(Scale::full);
    for (Role r : all_roles) {
        const auto l = layout_for(r, d, WeightType::f16);
        std::set<std::string> names;
        for (const auto &t : l.tensors) EXPECT_TRUE(names.insert(t.name).second) << role_name(r) << ": " << t.name;
    }
}

TEST(Layout, SpecShapesAndTypes) {
    const Dims d = dims_for_scale(Scale::full);
    const auto tts = tts_layout(d.tts, WeightType::f16);
    EXPECT_EQ(get(tts, "token_embd.weight").ne, (NE{768, 158626, 1, 1}));
    EXPECT_EQ(get(tts, "token_embd.weight").type, GGML_TYPE_F16);
    EXPECT_EQ(get(tts, "head_code.0.weight").ne, (NE{6562, 768, 1, 1}));
    EXPECT_EQ(get(tts, "head_code.0.weight").type, GGML_TYPE_F32);
    EXPECT_EQ(get(tts, "emb_text.weight").ne, (NE{768, 152064, 1, 1}));
    EXPECT_EQ(get(tts, "projector_semantic.linear1.weight").ne, (NE{4096, 768, 1, 1}));
    EXPECT_EQ(get(tts, "projector_spk.linear1.weight").type, GGML_TYPE_F16);
    EXPECT_EQ(get(tts, "blk.19.ffn_down.weight").ne, (NE{3072, 768, 1, 1}));
    EXPECT_EQ(tts.find("output.weight"), nullptr);  // spec: there is no output.weight

    const auto enc = encoder_layout(d.encoder);
    EXPECT_EQ(get(enc, "pre_lookahead_layer.conv1.weight").ne, (NE{4, 512, 512, 1}));
    EXPECT_EQ(get(enc, "encoders.5.self_attn.pos_bias_u").ne, (NE{64, 8, 1, 1}));
    EXPECT_EQ(get(enc, "up_encoders.3.feed_forward.w_1.weight").ne, (NE{512, 2048, 1, 1}));
    EXPECT_EQ(get(enc, "up_layer.conv.weight").ne, (NE{5, 512, 512, 1}));

    const auto fm = flow_matching_layout(d.flow_matching);
    EXPECT_EQ(get(fm, "estimator.blocks.15.adaLN_modulation.1.weight").ne, (NE{512, 4608, 1, 1}));
    EXPECT_EQ(get(fm, "estimator.in_proj.weight").ne, (NE{320, 512, 1, 1}));
    EXPECT_EQ(get(fm, "estimator.final_layer.linear.weight").ne, (NE{512, 80, 1, 1}));

    const auto hift = hifigan2_layout(d.hift);
    EXPECT_EQ(get(hift, "ups.0.weight").ne, (NE{16, 256, 512, 1}));
    EXPECT_EQ(get(hift, "ups.2.weight").ne, (NE{7, 64, 128, 1}));
    EXPECT_EQ(get(hift, "source_downs.0.weight").ne, (NE{30, 18, 256, 1}));
    EXPECT_EQ(get(hift, "resblocks.8.convs1.2.weight").ne, (NE{11, 64, 64, 1}));
    EXPECT_EQ(get(hift, "source_resblocks.2.convs2.0.weight").ne, (NE{11, 64, 64, 1}));
    EXPECT_EQ(get(hift, "conv_post.weight").ne, (NE{7, 64, 18, 1}));
    EXPECT_EQ(get(hift, "f0_predictor.condnet.0.weight").ne, (NE{3, 80, 512, 1}));

    const auto pc = prompt_cache_layout(d.prompt_cache);
    EXPECT_EQ(get(pc, "prompt_cache.conformer_att_cache").ne, (NE{128, 302, 8, 10}));
    EXPECT_EQ(get(pc, "prompt_cache.estimator_cnn_cache").ne, (NE{1024, 2, 80, 2}));
    EXPECT_EQ(get(pc, "prompt_cache.estimator_att_cache").ne, (NE{128, 302, 640, 2}));

    const auto llm = llm_layout(d.llm, WeightType::f16);
    EXPECT_EQ(get(llm, "token_embd.weight").ne, (NE{4096, 151748, 1, 1}));
    EXPECT_EQ(get(llm, "blk.0.attn_k.weight").ne, (NE{4096, 1024, 1, 1}));
    EXPECT_EQ(get(llm, "blk.35.attn_q_norm.weight").ne, (NE{128, 1, 1, 1}));
}

TEST(Layout, DataBytesMatchOfficialSizesForF32Files) {
    // token2wav and projector sizes are the data section + a small header (spec §1.1); the data
    // section alone must already be within 0.1 % of the official byte counts.
    const Dims d = dims_for_scale(Scale::full);
    auto near = [](uint64_t have, uint64_t want) { return std::abs(double(have) - double(want)) / double(want) < 1e-3; };
    EXPECT_TRUE(near(projector_layout(d.projector).data_bytes(), 14948640));
    EXPECT_TRUE(near(encoder_layout(d.encoder).data_bytes(), 151339008));
    EXPECT_TRUE(near(flow_matching_layout(d.flow_matching).data_bytes(), 458250240));
    EXPECT_TRUE(near(flow_extra_layout(d.flow_extra).data_bytes(), 13663328));
    EXPECT_TRUE(near(hifigan2_layout(d.hift).data_bytes(), 83242816));
    EXPECT_TRUE(near(prompt_cache_layout(d.prompt_cache).data_bytes(), 211613152));
}

TEST(Layout, TinyKeepsToken2WavWidthsAndShrinksOnlyBlocks) {
    const Dims full = dims_for_scale(Scale::full), tiny = dims_for_scale(Scale::tiny);
    const auto enc = encoder_layout(tiny.encoder);
    EXPECT_NE(enc.find("encoders.0.self_attn.linear_q.weight"), nullptr);
    EXPECT_EQ(enc.find("encoders.1.self_attn.linear_q.weight"), nullptr);
    EXPECT_NE(enc.find("up_encoders.0.norm_ff.weight"), nullptr);
    EXPECT_EQ(enc.find("up_encoders.1.norm_ff.weight"), nullptr);
    EXPECT_EQ(get(enc, "encoders.0.feed_forward.w_1.weight").ne, (NE{512, 2048, 1, 1}));
    const auto fm = flow_matching_layout(tiny.flow_matching);
    EXPECT_NE(fm.find("estimator.blocks.1.mlp.fc2.weight"), nullptr);
    EXPECT_EQ(fm.find("estimator.blocks.2.mlp.fc2.weight"), nullptr);
    EXPECT_EQ(hifigan2_layout(tiny.hift).data_bytes(), hifigan2_layout(full.hift).data_bytes());
    // The prompt cache holds one slot per conformer layer and per (DiT block, Euler step),
    // so it follows the shrunken block counts (the Token2Wav engine checks this).
    const auto pc = prompt_cache_layout(tiny.prompt_cache);
    EXPECT_EQ(get(pc, "prompt_cache.conformer_att_cache").ne[3], tiny.encoder.n_blocks + tiny.encoder.n_up_blocks);
    EXPECT_EQ(get(pc, "prompt_cache.estimator_cnn_cache").ne[2], tiny.flow_matching.n_blocks * tiny.prompt_cache.n_steps);
    EXPECT_LT(pc.data_bytes(), prompt_cache_layout(full.prompt_cache).data_bytes());
    EXPECT_EQ(flow_extra_layout(tiny.flow_extra).data_bytes(), flow_extra_layout(full.flow_extra).data_bytes());
    // Interface constants never shrink.
    EXPECT_EQ(get(llm_layout(tiny.llm, WeightType::f16), "output.weight").ne[1], kLlmVocab);
    EXPECT_EQ(get(tts_layout(tiny.tts, WeightType::f16), "emb_text.weight").ne[1], kTtsText);
    EXPECT_EQ(tiny.projector.n_in, tiny.llm.n_embd);
    EXPECT_EQ(tiny.projector.n_out, tiny.tts.n_embd);
}

TEST(Layout, Q4KMFollowsLlamaQuantizeMix) {
    const Dims d = dims_for_scale(Scale::full);
    const auto l = llm_layout(d.llm, WeightType::q4_k_m);
    EXPECT_EQ(get(l, "output.weight").type, GGML_TYPE_Q6_K);
    EXPECT_EQ(get(l, "token_embd.weight").type, GGML_TYPE_Q4_K);
    EXPECT_EQ(get(l, "blk.0.attn_v.weight").type, GGML_TYPE_Q6_K);   // first eighth: more bits
    EXPECT_EQ(get(l, "blk.5.attn_v.weight").type, GGML_TYPE_Q4_K);
    EXPECT_EQ(get(l, "blk.6.ffn_down.weight").type, GGML_TYPE_Q6_K);  // (6 - 4) % 3 == 2
    EXPECT_EQ(get(l, "blk.10.attn_q.weight").type, GGML_TYPE_Q4_K);
    EXPECT_EQ(get(l, "blk.10.attn_norm.weight").type, GGML_TYPE_F32);
    // Rows not divisible by 256 fall back like llama-quantize: Q4_K -> Q5_0, Q6_K -> Q8_0.
    const auto t = llm_layout(dims_for_scale(Scale::tiny).llm, WeightType::q4_k_m);
    EXPECT_EQ(get(t, "blk.1.attn_q.weight").type, GGML_TYPE_Q5_0);
    EXPECT_EQ(get(t, "output.weight").type, GGML_TYPE_Q8_0);
    EXPECT_EQ(get(t, "blk.1.ffn_down.weight").type, GGML_TYPE_Q6_K);  // ne0 = FFN 256
}

TEST(Layout, ParsersNameTheFlag) {
    EXPECT_EQ(parse_scale("cpu", "--scale"), Scale::cpu);
    EXPECT_EQ(parse_weight_type("q4_k_m", "--type"), WeightType::q4_k_m);
    EXPECT_EQ(parse_role("hifigan2", "--only"), Role::hifigan2);
    try {
        parse_scale("huge", "--scale");
        FAIL();
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
        EXPECT_NE(std::string(e.what()).find("--scale"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("tiny, cpu, full"), std::string::npos);
    }
    EXPECT_THROW(parse_weight_type("q2_k", "--type"), rtf::Error);
    EXPECT_THROW(parse_role("vocoder", "--only"), rtf::Error);
}
