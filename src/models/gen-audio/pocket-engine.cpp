#include "models/gen-audio/pocket-engine.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <ggml.h>
#include <llama.h>
#include <mtmd-helper.h>
#include <mtmd.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/gen-audio/mtmd-common.h"

namespace rtf::pocket {

namespace {

namespace fs = std::filesystem;

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// What llama.cpp's helper tunes per model variant (the reference's per-pack yaml): noise
// temperature, EOS tail frames (0 = by the chunk's length), short-text padding.
struct Pack {
    float temp = 0;
    int tail = 0;
    bool pad_short = false;
};
Pack pack_for(const std::string &variant) {
    if (variant == "english" || variant == "english_2026-04") return {0.3f, 0, false};
    if (variant == "english_2026-01") return {0.7f, 0, true};
    if (variant == "french_24l") return {0.7f, 8, false};
    return {};
}

constexpr int kMaxChunkTokens = 50;  // the reference's tokens per generation chunk
constexpr double kFrameRate = 12.5;

}  // namespace

void PocketConfig::validate() const {
    if (backbone_path.empty()) throw_usage("pocket-tts: the backbone file (pocket-tts.gguf) is required");
    if (mmproj_path.empty()) throw_usage("pocket-tts: the mmproj file (mmproj-pocket-tts.gguf) is required");
    if (temp < 0 || temp > 10) throw_usage("--temp: " + std::to_string(temp) + " is out of range (0 = the model's, ..10)");
    if (max_frames < 0) throw_usage("pocket-tts: max_frames must be >= 0");
    if (!speaker_file.empty() && !fs::is_regular_file(speaker_file))
        throw_usage("--speaker-file: no such file: " + speaker_file);
    placement.validate("backbone");
}

nlohmann::json PocketConfig::to_json() const {
    return {{"backbone_path", backbone_path}, {"mmproj_path", mmproj_path}, {"placement", placement.to_json()},
            {"seed", seed}, {"temp", temp}, {"speaker_file", speaker_file}, {"max_frames", max_frames}};
}

nlohmann::json PocketTimings::to_json() const {
    const double per = n_frames > 0 ? 1.0 / static_cast<double>(n_frames) : 0.0;
    return {{"load_ms", load_ms},       {"voice_ms", voice_ms},     {"prefill_ms", prefill_ms},
            {"n_prompt_rows", n_prompt_rows}, {"n_frames", n_frames}, {"backbone_ms", backbone_ms},
            {"flow_ms", flow_ms},       {"decode_ms", decode_ms},   {"n_decode_calls", n_decode_calls},
            {"ms_per_frame_backbone", backbone_ms * per}, {"ms_per_frame_flow", flow_ms * per}};
}

PocketGenerator::PocketGenerator(const PocketConfig &cfg) : cfg_(cfg) {
    cfg_.validate();
    const auto t0 = std::chrono::steady_clock::now();
    lm::ensure_llama_backend();
    llama_ = lm::load_llama(cfg_.backbone_path, cfg_.placement, /*embeddings=*/true, "pocket-tts backbone");
    llama_model *model = llama_.model.get();
    mtmd_ = gen_audio::open_mmproj(cfg_.mmproj_path, model, cfg_.placement, "pocket-tts");
    const mtmd_gen_audio_info info = mtmd_gen_audio_get_info(mtmd_);
    if (info.type != MTMD_GEN_AUDIO_TYPE_POCKETTTS)
        throw_setup(cfg_.mmproj_path + ": not a Pocket TTS mmproj (clip.gen.audio.projector_type is not pockettts_gen)");
    sample_rate_ = info.sample_rate;
    variant_ = info.model_variant ? info.model_variant : "";
    const Pack pack = pack_for(variant_);
    pack_temp_ = pack.temp;
    pack_tail_ = pack.tail;
    pack_pad_short_ = pack.pad_short;
    n_embd_ = llama_model_n_embd_inp(model);

    const llama_vocab *vocab = llama_model_get_vocab(model);
    tok_audio_bos_ = gen_audio::find_token(vocab, "<|audio_bos|>");
    tok_bos_voice_ = gen_audio::find_token(vocab, "<|bos_before_voice|>");
    if (tok_audio_bos_ < 0) throw_setup(cfg_.backbone_path + ": the vocabulary has no <|audio_bos|> token");

    // The token rows the prompt is made of, as floats (what the helper reads from libllama).
    tok_embd_ = gen_audio::token_rows(cfg_.backbone_path, n_embd_);
    n_latent_ = static_cast<int>(gen_audio::tensor_ne0(cfg_.mmproj_path, "a.gen.input_linear.weight"));

    // The speaker's rows: the reference audio through the mimi encoder (one row per 80 ms).
    if (!cfg_.speaker_file.empty()) {
        const auto tv = std::chrono::steady_clock::now();
        voice_ = encode_voice(cfg_.speaker_file);
        timings_.voice_ms = ms_since(tv);
    }
    voices_.emplace_back("default", voice_);
    timings_.load_ms = ms_since(t0);
}

PocketGenerator::~PocketGenerator() {
    if (mtmd_) mtmd_free(mtmd_);
}

float PocketGenerator::temp() const { return cfg_.temp > 0 ? cfg_.temp : pack_temp_ > 0 ? pack_temp_ : 0.7f; }

std::string PocketGenerator::prepare_text(const std::string &in, bool pad_short) {
    std::string s;
    s.reserve(in.size() + 9);
    for (char c : in) s += c == '\n' || c == '\r' ? ' ' : c == ';' ? ',' : c;
    const size_t b = s.find_first_not_of(' ');
    if (b == std::string::npos) return "";
    s = s.substr(b, s.find_last_not_of(' ') - b + 1);
    if (s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
    if (std::isalnum(static_cast<unsigned char>(s.back()))) s += '.';
    if (pad_short) {
        int words = 0;
        bool in_word = false;
        for (char c : s) {
            if (c == ' ') in_word = false;
            else if (!in_word) in_word = true, ++words;
        }
        if (words < 5) s = std::string(8, ' ') + s;
    }
    return s;
}

std::vector<int32_t> PocketGenerator::tokenize(const std::string &s) const {
    const llama_vocab *vocab = llama_model_get_vocab(llama_.model.get());
    std::vector<llama_token> ids(s.size() + 16);
    int n = llama_tokenize(vocab, s.c_str(), static_cast<int32_t>(s.size()), ids.data(), static_cast<int32_t>(ids.size()),
                           false, false);
    if (n < 0) {
        ids.resize(static_cast<size_t>(-n));
        n = llama_tokenize(vocab, s.c_str(), static_cast<int32_t>(s.size()), ids.data(), static_cast<int32_t>(ids.size()),
                           false, false);
    }
    ids.resize(static_cast<size_t>(std::max(n, 0)));
    return ids;
}

std::vector<std::vector<int32_t>> PocketGenerator::split_chunks(const std::vector<int32_t> &ids) const {
    if (static_cast<int>(ids.size()) <= kMaxChunkTokens) return {ids};
    // The tokens of the boundary pieces (their first token is the tokenizer's space prefix).
    auto boundary = [&](const char *s) {
        std::vector<int32_t> t = tokenize(s);
        if (!t.empty()) t.erase(t.begin());
        return t;
    };
    const std::vector<int32_t> strong = boundary(".!...?"), weak = boundary(",;:");
    // Cuts after each run of boundary tokens (the punctuation stays with what it ends).
    auto cut = [](const std::vector<int32_t> &v, const std::vector<int32_t> &b) {
        std::vector<std::vector<int32_t>> out(1);
        bool after = false;
        for (int32_t t : v) {
            const bool is_b = std::find(b.begin(), b.end(), t) != b.end();
            if (after && !is_b) out.emplace_back();
            out.back().push_back(t);
            after = is_b;
        }
        return out;
    };
    std::vector<std::vector<int32_t>> pieces;
    for (auto &sentence : cut(ids, strong)) {
        if (static_cast<int>(sentence.size()) <= kMaxChunkTokens) {
            pieces.push_back(std::move(sentence));
            continue;
        }
        auto clauses = cut(sentence, weak);
        if (clauses.size() > 1)
            for (auto &c : clauses) pieces.push_back(std::move(c));
        else
            pieces.push_back(std::move(sentence));
    }
    // Greedy packing of whole pieces into chunks of at most kMaxChunkTokens.
    std::vector<std::vector<int32_t>> chunks;
    for (auto &p : pieces) {
        if (p.empty()) continue;
        if (!chunks.empty() && chunks.back().size() + p.size() <= static_cast<size_t>(kMaxChunkTokens))
            chunks.back().insert(chunks.back().end(), p.begin(), p.end());
        else
            chunks.push_back(std::move(p));
    }
    if (chunks.empty()) chunks.push_back(ids);
    return chunks;
}

void PocketGenerator::push_row(std::vector<float> &dst, int32_t token) const {
    const size_t rows = tok_embd_.size() / static_cast<size_t>(n_embd_);
    if (token < 0 || static_cast<size_t>(token) >= rows)
        throw_runtime("pocket-tts: token " + std::to_string(token) + " has no embedding row (" + std::to_string(rows) + " rows)");
    const auto *r = tok_embd_.data() + static_cast<size_t>(token) * static_cast<size_t>(n_embd_);
    dst.insert(dst.end(), r, r + n_embd_);
}

void PocketGenerator::decode_rows(const float *rows, int n, int pos0, const char *what) {
    llama_batch b = llama_batch_init(n, n_embd_, 1);
    std::memcpy(b.embd, rows, sizeof(float) * static_cast<size_t>(n) * static_cast<size_t>(n_embd_));
    b.n_tokens = n;
    for (int i = 0; i < n; ++i) {
        b.pos[i] = pos0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i == n - 1;
    }
    const int rc = lm::locked_decode(llama_, b);
    llama_batch_free(b);
    if (rc != 0) throw_runtime(std::string("pocket-tts backbone: the ") + what + " decode failed (rc " + std::to_string(rc) + "): " + lm::take_llama_log());
    const float *h = llama_get_embeddings_ith(llama_.ctx.get(), -1);
    if (!h) throw_runtime(std::string("pocket-tts backbone: no hidden state after the ") + what + " decode");
    h_.assign(h, h + n_embd_);
}

void PocketGenerator::prompt_chunk(size_t idx, int pos0) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<float> rows;
    if (idx == 0) rows = voice_;  // the voice stays in the KV cache for every later chunk
    for (int32_t t : chunks_[idx]) push_row(rows, t);
    push_row(rows, tok_audio_bos_);
    const int n = static_cast<int>(rows.size() / static_cast<size_t>(n_embd_));
    decode_rows(rows.data(), n, pos0, "prompt");
    pos_ = pos0 + n;
    const int n_tok = static_cast<int>(chunks_[idx].size());
    budget_ = static_cast<int>(std::ceil((n_tok / 3.0 + 2.0) * kFrameRate));
    if (cfg_.max_frames > 0) budget_ = std::min(budget_, cfg_.max_frames);
    tail_ = pack_tail_ > 0 ? pack_tail_ : (n_tok <= 6 ? 5 : 3);
    step_ = 0;
    eos_step_ = -1;
    chunk_started_ = idx > 0;
    timings_.prefill_ms += ms_since(t0);
    timings_.n_prompt_rows += n;
}

std::vector<float> PocketGenerator::encode_voice(const std::string &file) const {
    std::vector<float> rows;
    if (tok_bos_voice_ >= 0) push_row(rows, tok_bos_voice_);
    const std::vector<float> v = gen_audio::encode_speaker(mtmd_, file, n_embd_, "pocket-tts");
    rows.insert(rows.end(), v.begin(), v.end());
    return rows;
}

void PocketGenerator::add_voice(const std::string &name, const std::string &file) {
    gen_audio::check_new_voice(voices_, name, "pocket-tts");
    const auto tv = std::chrono::steady_clock::now();
    voices_.emplace_back(name, encode_voice(file));
    timings_.voice_ms += ms_since(tv);
}

std::vector<std::string> PocketGenerator::voice_names() const {
    std::vector<std::string> n;
    for (const auto &v : voices_) n.push_back(v.first);
    return n;
}

void PocketGenerator::start(const std::string &text, const std::string &voice) {
    voice_ = gen_audio::pick_voice(voices_, voice, "pocket-tts");
    const std::string s = prepare_text(text, pack_pad_short_);
    if (s.empty()) throw_usage("pocket-tts: the text to speak is empty");
    const std::vector<int32_t> ids = tokenize(s);
    if (ids.empty()) throw_usage("pocket-tts: the text gave no tokens");
    chunks_ = split_chunks(ids);
    chunk_ = 0;
    n_tokens_ = static_cast<int64_t>(ids.size());
    frame_index_ = 0;
    const double load_ms = timings_.load_ms, voice_ms = timings_.voice_ms;
    timings_ = PocketTimings{};
    timings_.load_ms = load_ms;
    timings_.voice_ms = voice_ms;
    llama_memory_clear(llama_get_memory(llama_.ctx.get()), true);
    // The flow's noise restarts at the seed: clip re-seeds its RNG only when the seed it is
    // given changes, so a context that last ran with this seed is first moved off it by one
    // call with another seed (a 1-frame decode, its output dropped).
    if (last_seed_ == cfg_.seed) {
        std::vector<float> z(static_cast<size_t>(n_latent_), 0.0f);
        mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
        in.type = MTMD_GEN_PROCESS_TYPE_GEN_WAV;
        in.feats = z.data();
        in.n_feats = z.size();
        in.seed = cfg_.seed ^ 0x5EEDu;
        mtmd_gen_out out{};
        if (mtmd_gen_audio_process(mtmd_, &in, &out) != 0) throw_runtime("pocket-tts: the RNG re-seed call failed");
    }
    n_voice_pos_ = static_cast<int>(voice_.size() / static_cast<size_t>(n_embd_));
    prompt_chunk(0, 0);
    done_ = false;
}

bool PocketGenerator::next(PocketFrame &out) {
    while (!done_) {
        const auto t0 = std::chrono::steady_clock::now();
        mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
        in.type = MTMD_GEN_PROCESS_TYPE_GEN_CODE;
        in.embd = h_.data();
        in.seed = cfg_.seed;
        in.temp = temp();
        mtmd_gen_out g{};
        if (mtmd_gen_audio_process(mtmd_, &in, &g) != 0) throw_runtime("pocket-tts: the flow step (GEN_CODE) failed");
        last_seed_ = cfg_.seed;
        timings_.flow_ms += ms_since(t0);
        if (g.is_eos && eos_step_ < 0) eos_step_ = step_;
        // The chunk ends at its EOS tail or its budget; that step's frame is dropped (as the reference does).
        if ((eos_step_ >= 0 && step_ >= eos_step_ + tail_) || step_ >= budget_) {
            if (chunk_ + 1 >= chunks_.size()) {
                done_ = true;
                return false;
            }
            ++chunk_;
            llama_memory_seq_rm(llama_get_memory(llama_.ctx.get()), 0, n_voice_pos_, -1);
            prompt_chunk(chunk_, n_voice_pos_);
            continue;
        }
        if (static_cast<int>(g.n_feats) != n_latent_) throw_runtime("pocket-tts: the flow step returned " + std::to_string(g.n_feats) + " floats, expected " + std::to_string(n_latent_));
        out.latent.assign(g.feats, g.feats + g.n_feats);
        out.new_chunk = chunk_started_;
        out.index = frame_index_++;
        chunk_started_ = false;
        ++step_;
        // The frame goes back into the backbone as its next input row.
        const auto t1 = std::chrono::steady_clock::now();
        std::vector<float> row(g.embd, g.embd + n_embd_);
        decode_rows(row.data(), 1, pos_++, "feedback");
        timings_.backbone_ms += ms_since(t1);
        ++timings_.n_frames;
        return true;
    }
    return false;
}

MimiDecoder::MimiDecoder(const PocketGenerator &gen, int n_threads)
    : n_latent_(gen.n_latent()), seed_(gen.config().seed) {
    lm::ModelPlacement p = gen.config().placement;
    if (n_threads > 0) p.n_threads = p.n_threads_batch = n_threads;
    mtmd_ = gen_audio::open_mmproj(gen.config().mmproj_path, gen.model(), p, "pocket-tts");
    // A gen context allocates its graphs at its first call, from that call's graph; the GEN_WAV
    // graph cannot be that first one (clip.cpp sizes the warm-up without the frames), so one
    // flow step on a zero state comes first, as in llama.cpp's helper, where GEN_CODE always runs first.
    std::vector<float> h(static_cast<size_t>(gen.n_embd()), 0.0f);
    mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
    in.type = MTMD_GEN_PROCESS_TYPE_GEN_CODE;
    in.embd = h.data();
    in.seed = seed_;
    mtmd_gen_out out{};
    if (mtmd_gen_audio_process(mtmd_, &in, &out) != 0) throw_setup("pocket-tts: the mimi decoder's context failed its first call");
}

MimiDecoder::~MimiDecoder() {
    if (mtmd_) mtmd_free(mtmd_);
}

std::vector<float> MimiDecoder::decode(const float *latents, size_t n_frames) {
    if (n_frames == 0) return {};
    const auto t0 = std::chrono::steady_clock::now();
    mtmd_gen_inp in = mtmd_gen_inp_default(mtmd_);
    in.type = MTMD_GEN_PROCESS_TYPE_GEN_WAV;
    in.feats = latents;
    in.n_feats = n_frames * static_cast<size_t>(n_latent_);
    in.seed = seed_;
    in.state_data = state_.empty() ? nullptr : state_.data();
    in.state_size = state_.size();
    mtmd_gen_out out{};
    if (mtmd_gen_audio_process(mtmd_, &in, &out) != 0) throw_runtime("pocket-tts: the mimi decoder (GEN_WAV) failed");
    std::vector<float> pcm(out.audio, out.audio + out.n_samples);
    state_.assign(out.state_data, out.state_data + out.state_size);
    decode_ms_ += ms_since(t0);
    ++n_calls_;
    return pcm;
}

}  // namespace rtf::pocket
