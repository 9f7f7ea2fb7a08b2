#include "speak/pocket-stages.h"

#include <chrono>
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "models/gguf/pockettts-layout.h"
#include "profile/profiler.h"

namespace rtf::speak {

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr double kFrameMs = 1000.0 * gguf::pockettts::kFrameSamples / gguf::pockettts::kSampleRate;  // 80 ms

}  // namespace

PocketGenStage::PocketGenStage(pipe::StageSpec spec, pocket::PocketGenerator &gen, int first_frames, int frames,
                               int64_t max_frames, std::string voice)
    : Stage(std::move(spec)), gen_(gen), first_(first_frames), every_(frames), voice_(std::move(voice)), max_frames_(max_frames) {}

void PocketGenStage::process(pipe::Item &&request, pipe::Emitter &out) {
    gen_.start(request.text, voice_);
    prof::record("gen.prefill_ms", gen_.timings().prefill_ms);
    const int n_latent = gen_.n_latent();
    pipe::Item item;
    int64_t made = 0;
    int want = first_;
    bool restart_next = false;
    auto emit = [&] {
        if (item.hidden.empty()) return;
        item.n_embd = n_latent;
        item.audio_ms = kFrameMs * static_cast<double>(item.hidden.size() / static_cast<size_t>(n_latent));
        if (restart_next) item.marks |= kRestart;
        restart_next = false;
        out.emit(std::move(item));
        item = pipe::Item{};
        // Chunk sizes double from the first up to family-frames: each chunk's playing time
        // covers making the next one (a jump from 2 frames straight to 8 leaves a gap).
        want = std::min(every_, 2 * want);
    };
    pocket::PocketFrame f;
    double t = now_ms();
    while ((max_frames_ <= 0 || made < max_frames_) && gen_.next(f)) {
        const double t1 = now_ms();
        prof::record("gen.ms_per_frame", t1 - t);
        t = t1;
        if (f.new_chunk) {
            emit();  // the previous text chunk's frames: the decoder restarts after them
            restart_next = true;
        }
        item.hidden.insert(item.hidden.end(), f.latent.begin(), f.latent.end());
        ++made;
        if (static_cast<int>(item.hidden.size() / static_cast<size_t>(n_latent)) >= want) {
            emit();
            t = now_ms();  // time blocked in emit is not the generator's
        }
    }
    gen_.stop();
    item.last = true;
    if (!item.hidden.empty()) emit();
}

PocketDecodeStage::PocketDecodeStage(pipe::StageSpec spec, pocket::MimiDecoder &dec, int n_latent, int sample_rate)
    : Stage(std::move(spec)), dec_(dec), n_latent_(n_latent), sample_rate_(sample_rate) {}

void PocketDecodeStage::process(pipe::Item &&in, pipe::Emitter &out) {
    if (in.marks & PocketGenStage::kRestart) dec_.reset();
    const size_t n = in.hidden.size() / static_cast<size_t>(n_latent_);
    const double t0 = now_ms();
    pipe::Item o;
    o.pcm = dec_.decode(in.hidden.data(), n);
    if (n > 0) prof::record("decoder.ms_per_frame", (now_ms() - t0) / static_cast<double>(n));
    o.sample_rate = sample_rate_;
    o.audio_ms = 1000.0 * static_cast<double>(o.pcm.size()) / sample_rate_;
    o.last = in.last;
    out.emit(std::move(o));
}

PocketFamily::PocketFamily(const Kit &kit, const SpeakConfig &cfg) {
    const auto t0 = std::chrono::steady_clock::now();
    pocket::PocketConfig c;
    c.backbone_path = kit.backbone;
    c.mmproj_path = kit.mmproj;
    c.placement = cfg.tts.placement;
    c.seed = cfg.llm.seed;
    c.temp = static_cast<float>(cfg.family.temp);
    c.speaker_file = cfg.family.speaker_file;
    gen_ = std::make_unique<pocket::PocketGenerator>(c);
    for (const auto &[name, file] : kit.voices) gen_->add_voice(name, file);  // voices/NAME.wav, encoded once
    dec_ = std::make_unique<pocket::MimiDecoder>(*gen_, cfg.t2w.threads_voc);
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

FamilyRun PocketFamily::stages(const SpeakConfig &cfg) {
    const std::string voice = family_voice(cfg, gen_->config().speaker_file, gen_->voice_names());
    const int64_t max_frames =
        cfg.max_audio_s > 0 ? static_cast<int64_t>(std::ceil(cfg.max_audio_s * 1000.0 / kFrameMs - 1e-9)) : 0;
    dec_->reset_timings();
    dec_->reset();  // each utterance decodes from a cold state, as its first frame was made
    FamilyRun r;
    r.stages.push_back(std::make_unique<PocketGenStage>(
        stage_spec("gen", cfg.tts.placement.threads(), cfg.place_tts, cfg.tts.placement.device), *gen_,
        cfg.family.first_frames, cfg.family.frames, max_frames, voice));
    r.stages.push_back(std::make_unique<PocketDecodeStage>(
        stage_spec("decoder", cfg.t2w.threads_voc, cfg.place_t2w, cfg.tts.placement.device), *dec_, gen_->n_latent(),
        gen_->sample_rate()));
    return r;
}

nlohmann::json PocketFamily::engines_json() const {
    pocket::PocketTimings t = gen_->timings();
    t.decode_ms = dec_->decode_ms();
    t.n_decode_calls = dec_->n_calls();
    return {{"family", "pocket-tts"},
            {"variant", gen_->variant()},
            {"temp", gen_->temp()},
            {"seed", gen_->config().seed},
            {"voices", gen_->voice_names()},
            {"n_voice_rows", gen_->n_voice_rows()},
            {"n_text_chunks", gen_->n_chunks()},
            {"gen", t.to_json()}};
}


}  // namespace rtf::speak
