#pragma once
// The five stages of a duplex session (speak/duplex.h, `rtf duplex`), as speak-stages.h holds
// the simplex ones: input (the recording's frames pushed on absolute deadlines) -> apm (the
// audio encoder) -> llm (DuplexLlm's listen/speak turn) -> tts (the duplex feed) -> t2w
// (Token2Wav). Each writes its own fields of one DuplexShared (the session's timeline), read
// by run_duplex after the pipeline joined them. The items they hand on carry the input frame
// they stem from in pipe::Item::origin and the duplex marks below in Item::marks.
#include <memory>
#include <vector>

#include "pipeline/stage.h"
#include "profile/clock.h"
#include "speak/duplex.h"

namespace rtf::speak {

// The stages' names, in pipeline order (DuplexShared::busy, DuplexResult::busy_ms).
inline constexpr const char *kDuplexStages[] = {"input", "apm", "llm", "tts", "t2w"};

// Item::marks of a duplex session: a speaking chunk ends here (the LLM's decode chunk, a TTS
// call), the speak turn ends here.
enum DuplexMark : uint32_t { kChunkEnd = 1u << 0, kTurnEnd = 1u << 1 };
inline bool has_mark(const pipe::Item &i, DuplexMark m) { return (i.marks & m) != 0; }
inline void set_mark(pipe::Item &i, DuplexMark m, bool on) { i.marks = on ? (i.marks | m) : (i.marks & ~uint32_t(m)); }
// The input frame an item stems from (-1 = none).
inline int frame_of(const pipe::Item &i) { return static_cast<int>(i.origin); }

// What every stage writes (each its own fields; read after the pipeline joined them).
struct DuplexShared {
    DuplexShared(const DuplexConfig &c, prof::Clock &k) : cfg(c), clock(k) {}
    const DuplexConfig &cfg;
    prof::Clock &clock;
    double t0 = 0;         // set by the input stage before its first item leaves
    bool started = false;  // t0 is set
    std::vector<DuplexFrameRecord> frames;
    std::vector<DuplexChunkRecord> chunks;
    std::vector<double> busy;  // per kDuplexStages entry
    int tts_calls = 0;
    int audio_turn = 0;
    int last_text_frame = -1;  // written by tts: the frame of the latest text message
    // The reply (speak turn) each frame's messages belong to, -1 = none: written by the LLM
    // stage before it hands the frame's messages on, read by the later stages after.
    std::vector<int> reply_of_frame;
    int reply_of(const pipe::Item &i) const {
        const int f = frame_of(i);
        return f >= 0 && static_cast<size_t>(f) < reply_of_frame.size() ? reply_of_frame[static_cast<size_t>(f)] : -1;
    }
    bool reply_cancelled(const pipe::Item &i) const { return cfg.replies && cfg.replies->cancelled(reply_of(i)); }
    double now() const { return clock.now_ms() - t0; }

    // The test hooks, on the stage's thread.
    void hooks(const char *stage, int frame, const pipe::StageContext *ctx) const {
        if (cfg.delay_ms > 0 && cfg.delay_stage == stage) {
            if (ctx) ctx->sleep_ms(cfg.delay_ms);
            else std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(cfg.delay_ms));
        }
        if (cfg.fail_stage == stage && cfg.fail_frame == frame)
            throw std::runtime_error("test hook: stage '" + std::string(stage) + "' fails at frame " + std::to_string(frame));
    }
};

struct DuplexStages {
    std::vector<std::unique_ptr<pipe::Stage>> owned;  // input, apm, llm, tts, t2w
    std::vector<pipe::Stage *> list() const;
};

// The session's stages on `e`'s engines (threads from s.cfg); `source` and `s` must outlive
// them. `schedule`: the forced speak frames (empty = the LLM decides).
DuplexStages make_duplex_stages(DuplexShared &s, DuplexEngines &e, FrameSource &source, std::vector<FrameRange> schedule);

}  // namespace rtf::speak
