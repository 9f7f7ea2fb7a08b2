#include "models/gen-audio/qwen3tts-engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <cstring>

#include <llama.h>
#include <mtmd.h>

#include "core/error.h"
#include "models/gen-audio/mtmd-common.h"
#include "models/gguf/gguf-file.h"

namespace rtf::gen_audio {

void Qwen3Config::validate() const {
    if (backbone_path.empty()) throw_usage("qwen3-tts: the backbone file (qwen3-tts.gguf) is required");
    if (mmproj_path.empty()) throw_usage("qwen3-tts: the mmproj file (mmproj-qwen3-tts.gguf) is required");
    if (!(temp > 0 && temp <= 10)) throw_usage("qwen3-tts: temp must be in (0, 10]");
    if (top_k < 0 || predictor_top_k < 0 || max_frames < 0) throw_usage("qwen3-tts: top-k and max_frames must be >= 0");
    if (penalty_last_n < -1) throw_usage("qwen3-tts: penalty_last_n must be -1 (the utterance), 0 (off) or > 0");
    if (!speaker_file.empty() && !std::filesystem::is_regular_file(speaker_file))
        throw_usage("--speaker-file: no such file: " + speaker_file);
    placement.validate("backbone");
}

Qwen3Generator::Qwen3Generator(const Qwen3Config &cfg) : cfg_(cfg) {
    cfg_.validate();
    lm::ensure_llama_backend();
    // Logits (code 0) and the last row's hidden state (the predictor's input) from one decode.
    llama_ = lm::load_llama(cfg_.backbone_path, cfg_.placement, /*embeddings=*/true, "qwen3-tts talker");
    llama_model *model = llama_.model.get();
    mtmd_ = open_mmproj(cfg_.mmproj_path, model, cfg_.placement, "qwen3-tts");
    if (mtmd_gen_audio_get_info(mtmd_).type != MTMD_GEN_AUDIO_TYPE_QWEN3TTS)
        throw_setup(cfg_.mmproj_path + ": not a Qwen3-TTS mmproj (clip.gen.audio.projector_type is not qwen3tts_gen)");
    n_embd_ = llama_model_n_embd_inp(model);
    tok_embd_ = token_rows(cfg_.backbone_path, n_embd_);
    const llama_vocab *v = llama_model_get_vocab(model);
    const std::pair<int32_t *, std::string> specials[] = {
        {&codec_0_, "<|codec_0|>"},          {&codec_bos_, "<|codec_bos|>"},         {&codec_eos_, "<|codec_eos_token|>"},
        {&codec_pad_, "<|codec_pad|>"},      {&think_, "<|codec_think|>"},           {&think_bos_, "<|codec_think_bos|>"},
        {&think_eos_, "<|codec_think_eos|>"}, {&tts_pad_, "<tts_pad>"},              {&tts_bos_, "<tts_text_bos>"},
        {&tts_eos_, "<tts_text_eod>"},       {&lang_, "<|codec_language_" + cfg_.language + "|>"}};
    for (const auto &[id, text] : specials) {
        *id = find_token(v, text.c_str());
        if (*id < 0) throw_setup(cfg_.backbone_path + ": the vocabulary has no " + text + " token");
    }
    if (!cfg_.speaker_file.empty()) {
        const auto tv = std::chrono::steady_clock::now();
        speaker_ = encode_voice(cfg_.speaker_file);
        voice_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tv).count();
    }
    voices_.emplace_back("default", speaker_);
    // The sampler: the converter's suppressed rows at -inf (as llama-tts's common sampler biases
    // them), then llama-tts's chain.
    {
        gguf::GgufFile g(cfg_.backbone_path);
        const int64_t k = gguf_find_key(g.ctx(), "tokenizer.ggml.suppress_tokens");
        if (k >= 0 && gguf_get_arr_type(g.ctx(), k) == GGUF_TYPE_INT32) {
            const auto *d = static_cast<const int32_t *>(gguf_get_arr_data(g.ctx(), k));
            suppress_.assign(d, d + gguf_get_arr_n(g.ctx(), k));
        }
    }
    std::vector<llama_logit_bias> bias;
    for (int32_t t : suppress_) bias.push_back({t, -INFINITY});
    llama_sampler *c = llama_sampler_chain_init(llama_sampler_chain_default_params());
    const int32_t n_vocab = llama_vocab_n_tokens(v);
    if (!bias.empty()) llama_sampler_chain_add(c, llama_sampler_init_logit_bias(n_vocab, static_cast<int32_t>(bias.size()), bias.data()));
    if (cfg_.penalty_last_n != 0) {
        const int32_t last_n = cfg_.penalty_last_n < 0 ? static_cast<int32_t>(cfg_.placement.n_ctx) : cfg_.penalty_last_n;
        llama_sampler_chain_add(c, llama_sampler_init_penalties(n_vocab, last_n, cfg_.repeat_penalty, 0.0f, 0.0f));
    }
    if (cfg_.top_k > 0) llama_sampler_chain_add(c, llama_sampler_init_top_k(cfg_.top_k));
    llama_sampler_chain_add(c, llama_sampler_init_top_p(cfg_.top_p, 1));
    llama_sampler_chain_add(c, llama_sampler_init_min_p(cfg_.min_p, 1));
    llama_sampler_chain_add(c, llama_sampler_init_temp(cfg_.temp));
    llama_sampler_chain_add(c, llama_sampler_init_dist(cfg_.seed));
    sampler_.reset(c);
}

std::vector<float> Qwen3Generator::encode_voice(const std::string &file) const {
    std::vector<float> x = encode_speaker(mtmd_, file, n_embd_, "qwen3-tts");
    if (x.size() != static_cast<size_t>(n_embd_))
        throw_setup(cfg_.mmproj_path + ": the speaker encoder gave " + std::to_string(x.size() / static_cast<size_t>(n_embd_)) +
                    " rows for " + file + " (Qwen3-TTS's x-vector is one)");
    return x;
}

void Qwen3Generator::add_voice(const std::string &name, const std::string &file) {
    check_new_voice(voices_, name, "qwen3-tts");
    const auto tv = std::chrono::steady_clock::now();
    voices_.emplace_back(name, encode_voice(file));
    voice_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tv).count();
}

std::vector<std::string> Qwen3Generator::voice_names() const {
    std::vector<std::string> n;
    for (const auto &v : voices_) n.push_back(v.first);
    return n;
}

Qwen3Generator::~Qwen3Generator() {
    if (mtmd_) mtmd_free(mtmd_);
}

void Qwen3Generator::decode_rows(const float *rows, int n, int pos0, const char *what) {
    // IMROPE: four position streams, all equal for a text / codec stream (llama.cpp's "1-D" M-RoPE).
    llama_batch b = llama_batch_init(n, n_embd_, 1);
    std::memcpy(b.embd, rows, sizeof(float) * static_cast<size_t>(n) * static_cast<size_t>(n_embd_));
    b.n_tokens = n;
    std::vector<llama_pos> pos(static_cast<size_t>(4 * n));
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < n; ++i) pos[static_cast<size_t>(j * n + i)] = pos0 + i;
    llama_pos *own = b.pos;
    b.pos = pos.data();
    for (int i = 0; i < n; ++i) {
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i == n - 1;
    }
    const int rc = lm::locked_decode(llama_, b);
    b.pos = own;
    llama_batch_free(b);
    if (rc != 0) throw_runtime(std::string("qwen3-tts talker: the ") + what + " decode failed (rc " + std::to_string(rc) + "): " + lm::take_llama_log());
    const float *h = llama_get_embeddings_ith(llama_.ctx.get(), -1);
    if (!h) throw_runtime(std::string("qwen3-tts talker: no hidden state after the ") + what + " decode");
    h_.assign(h, h + n_embd_);
}

void Qwen3Generator::start(const std::string &text, const std::string &voice) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw_usage("qwen3-tts: the text to speak is empty");
    speaker_ = pick_voice(voices_, voice, "qwen3-tts");
    const llama_vocab *v = llama_model_get_vocab(llama_.model.get());
    // llama.cpp's wrapper: role tokens [0, 3), the body [3, n - 5).
    const std::string full = "<|im_start|>assistant\n" + text + "<|im_end|>\n<|im_start|>assistant\n";
    std::vector<llama_token> ids(full.size() + 16);
    const int n = llama_tokenize(v, full.c_str(), static_cast<int32_t>(full.size()), ids.data(), static_cast<int32_t>(ids.size()), false, true);
    if (n < 8) throw_usage("qwen3-tts: the text gave too few tokens");
    const size_t E = static_cast<size_t>(n_embd_);
    std::vector<float> rows;
    auto row = [&](int32_t a, int32_t b) {  // T[a] (+ T[b])
        const float *ra = tok_embd_.data() + static_cast<size_t>(a) * E;
        const size_t at = rows.size();
        rows.insert(rows.end(), ra, ra + E);
        if (b >= 0) {
            const float *rb = tok_embd_.data() + static_cast<size_t>(b) * E;
            for (size_t i = 0; i < E; ++i) rows[at + i] += rb[i];
        }
    };
    for (int i = 0; i < 3; ++i) row(ids[static_cast<size_t>(i)], -1);
    row(tts_pad_, think_);
    row(tts_pad_, think_bos_);
    row(tts_pad_, lang_);
    row(tts_pad_, think_eos_);
    if (!speaker_.empty()) {  // T[<tts_pad>] + the x-vector
        row(tts_pad_, -1);
        for (size_t i = 0; i < E; ++i) rows[rows.size() - E + i] += speaker_[i];
    }
    row(tts_bos_, codec_pad_);
    for (int i = 3; i < n - 5; ++i) row(ids[static_cast<size_t>(i)], codec_pad_);
    row(tts_eos_, codec_pad_);
    row(tts_pad_, codec_bos_);
    n_prompt_ = static_cast<int64_t>(rows.size() / E);

    llama_memory_clear(llama_get_memory(llama_.ctx.get()), true);
    llama_sampler_reset(sampler_.get());
    // The predictor's draws restart at the seed (clip re-seeds only on a new seed: see pocket-engine.cpp).
    if (last_seed_ == cfg_.seed) {
        std::vector<float> z(E, 0.0f);
        mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
        in.type = MTMD_GEN_PROCESS_TYPE_GEN_CODE;
        in.code0 = 0;
        in.embd = z.data();
        in.seed = cfg_.seed ^ 0x5EEDu;
        mtmd_gen_out out{};
        if (mtmd_gen_audio_process(mtmd_, &in, &out) != 0) throw_runtime("qwen3-tts: the RNG re-seed call failed");
    }
    decode_rows(rows.data(), static_cast<int>(n_prompt_), 0, "prompt");
    pos_ = static_cast<int>(n_prompt_);
    frame_ = 0;
    done_ = false;
}

int32_t Qwen3Generator::pick() {
    if (picker_) {
        const llama_vocab *v = llama_model_get_vocab(llama_.model.get());
        return picker_(llama_get_logits_ith(llama_.ctx.get(), -1), llama_vocab_n_tokens(v));
    }
    return llama_sampler_sample(sampler_.get(), llama_.ctx.get(), -1);
}

bool Qwen3Generator::next(Qwen3Frame &out) {
    if (done_) return false;
    const llama_vocab *v = llama_model_get_vocab(llama_.model.get());
    const int32_t code0 = pick();
    if (code0 == codec_eos_ || llama_vocab_is_eog(v, code0) || (cfg_.max_frames > 0 && frame_ >= cfg_.max_frames) ||
        pos_ + 1 >= static_cast<int>(cfg_.placement.n_ctx)) {
        done_ = true;
        return false;
    }
    if (code0 < codec_0_) throw_runtime("qwen3-tts: the talker sampled a text token (" + std::to_string(code0) + ")");
    mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
    in.type = MTMD_GEN_PROCESS_TYPE_GEN_CODE;
    in.code0 = code0 - codec_0_;
    in.embd = h_.data();
    if (cfg_.predictor_top_k > 0) in.top_k = cfg_.predictor_top_k;
    if (cfg_.predictor_top_p > 0) in.top_p = cfg_.predictor_top_p;
    in.seed = cfg_.seed;
    mtmd_gen_out g{};
    if (mtmd_gen_audio_process(mtmd_, &in, &g) != 0) throw_runtime("qwen3-tts: the code predictor (GEN_CODE) failed");
    last_seed_ = cfg_.seed;
    out.codes.assign(g.codes, g.codes + g.n_codes);
    out.index = frame_++;
    // The next input row: the frame's code embeddings plus <tts_pad> (the text is all in the prompt).
    std::vector<float> fb(g.embd, g.embd + n_embd_);
    const float *pad = tok_embd_.data() + static_cast<size_t>(tts_pad_) * static_cast<size_t>(n_embd_);
    for (int i = 0; i < n_embd_; ++i) fb[static_cast<size_t>(i)] += pad[i];
    decode_rows(fb.data(), 1, pos_++, "feedback");
    return true;
}

Code2Wav::Code2Wav(const Qwen3Generator &gen, int n_threads) : seed_(gen.config().seed) {
    lm::ModelPlacement p = gen.config().placement;
    if (n_threads > 0) p.n_threads = p.n_threads_batch = n_threads;
    mtmd_ = open_mmproj(gen.config().mmproj_path, gen.model(), p, "qwen3-tts");
    // The context's first call sizes its graphs: a GEN_CODE, as in llama.cpp's helper (pocket-engine.cpp).
    std::vector<float> h(static_cast<size_t>(gen.n_embd()), 0.0f);
    mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
    in.type = MTMD_GEN_PROCESS_TYPE_GEN_CODE;
    in.code0 = 0;
    in.embd = h.data();
    in.seed = seed_;
    mtmd_gen_out out{};
    if (mtmd_gen_audio_process(mtmd_, &in, &out) != 0) throw_setup("qwen3-tts: code2wav's context failed its first call");
}

Code2Wav::~Code2Wav() {
    if (mtmd_) mtmd_free(mtmd_);
}

void Code2Wav::reset() {
    window_state_.clear();
    window_.clear();
    returned_ = 0;
}

std::vector<float> Code2Wav::decode(const int32_t *codes, size_t n_frames) {
    std::vector<float> pcm;
    size_t done = 0;
    while (done < n_frames) {
        const size_t in_window = window_.size() / kCodes;
        const size_t take = std::min(n_frames - done, static_cast<size_t>(kWindow) - in_window);
        window_.insert(window_.end(), codes + done * kCodes, codes + (done + take) * kCodes);
        done += take;
        mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
        in.type = MTMD_GEN_PROCESS_TYPE_GEN_WAV;
        in.codes = window_.data();
        in.n_codes = window_.size();
        in.seed = seed_;
        in.state_data = window_state_.empty() ? nullptr : window_state_.data();
        in.state_size = window_state_.size();
        mtmd_gen_out out{};
        if (mtmd_gen_audio_process(mtmd_, &in, &out) != 0) throw_runtime("qwen3-tts: code2wav (GEN_WAV) failed");
        if (out.n_samples > returned_) pcm.insert(pcm.end(), out.audio + returned_, out.audio + out.n_samples);
        returned_ = out.n_samples;
        if (window_.size() / kCodes == static_cast<size_t>(kWindow)) {  // the window is whole: its end state goes on
            window_state_.assign(out.state_data, out.state_data + out.state_size);
            window_.clear();
            returned_ = 0;
        }
    }
    return pcm;
}

}  // namespace rtf::gen_audio
