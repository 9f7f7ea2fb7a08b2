// The Markdown view of an `rtf duplex-report` result (schema rtfkit.duplex-report/1,
// bench/duplex-analysis.h): verdict, the five checks, then the figures behind them — decision
// latency, the speak/audio matching, per matched pair first audio / RTF / playback, chunks.
// It is also what the command prints on the terminal, so the text and the file never differ.
#include <cctype>
#include <cmath>
#include <sstream>

#include "report/escape.h"
#include "report/json-view.h"
#include "report/report.h"

namespace rtf::report {

namespace {

std::string upper(std::string s) {
    for (auto &c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

// A threshold as given: "1000", "950.5" — never rounded onto the other side of a figure.
std::string limit(double v) { return fmt(v, v == std::floor(v) ? 0 : 3); }

const char *check_title(const std::string &id) {
    if (id == "decision_latency") return "[1] LLM decision latency";
    if (id == "first_audio") return "[2] first audio (e2e)";
    if (id == "tts_rtf") return "[3] TTS RTF";
    if (id == "no_failed_frames") return "no failed frames";
    if (id == "playback") return "[5] playback continuity";
    return "?";
}

}  // namespace

std::string duplex_markdown(const json &doc) {
    std::ostringstream o;
    auto me = [](const std::string &s) { return md_escape(s); };
    const std::string verdict = str(doc, "verdict");
    o << "## rtfkit duplex-report: " << upper(verdict) << "\n\n";
    if (!str(doc, "source").empty()) o << "Source: " << md_code(str(doc, "source")) << ". ";
    const json &opt = at(doc, "options");
    o << "Thresholds: ";
    if (std::isfinite(num(doc, "interval_ms")))  // absent when the file could not be read
        o << "interval " << limit(num(doc, "interval_ms")) << " ms (" << me(str(doc, "interval_from")) << "), ";
    o << "startup buffer " << limit(num(opt, "startup_buffer_ms")) << " ms, max gap " << limit(num(opt, "max_gap_ms"))
      << " ms; rules " << me(str(doc, "rules")) << " (docs/minicpmo45.md §7.5-§7.6). Exit code " << fmt(num(doc, "exit_code"), 0) << ".\n\n";
    o << "**" << me(str(doc, "summary")) << "**\n\n";

    o << "| check | result | rule |\n|---|---|---|\n";
    for (const auto &c : at(doc, "checks"))
        o << "| " << check_title(str(c, "id")) << " | " << me(str(c, "state")) << " | " << me(str(c, "rule")) << " |\n";
    o << "\n";
    if (!(at(doc, "valid").is_boolean() && at(doc, "valid").get<bool>())) {
        o << "Input not judged: " << me(str(doc, "invalid_reason")) << "\n";
        return o.str();
    }

    const json &meta = at(doc, "meta");
    auto shown = [&](const std::string &key) { return str(meta, key).empty() ? std::string("?") : me(str(meta, key)); };
    o << "Run: LLM " << shown("llm_path") << ", vision backend " << shown("vision_backend") << ", use_tts "
      << me(str(doc, "use_tts")) << ", media type " << shown("media_type") << ", threads " << shown("n_threads")
      << ", sample rate " << shown("sample_rate_hint") << " Hz.\n\n";

    const json &fr = at(doc, "frames"), &dl = at(doc, "decision_latency_ms");
    o << "### [1] Decision latency (push -> LISTEN/SPEAK, ms_total of ok frames)\n\n"
      << "| frames | speak | listen | failed | P50 ms | P95 ms | max ms | mean decode ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
      << "| " << fmt(num(fr, "n"), 0) << " | " << fmt(num(fr, "speak"), 0) << " | " << fmt(num(fr, "listen"), 0) << " | "
      << fmt(num(fr, "failed"), 0) << " | " << fmt(num(dl, "p50"), 1) << " | " << fmt(num(dl, "p95"), 1) << " | "
      << fmt(num(dl, "max"), 1) << " | " << fmt(num(dl, "decode_mean"), 1) << " |\n\n";

    const json &t = at(doc, "turns");
    o << "### Speak turns <-> audio turns (matched by time, not index)\n\n"
      << fmt(num(t, "speak"), 0) << " speak turn(s), " << fmt(num(t, "audio"), 0) << " audio turn(s), "
      << fmt(num(t, "matched"), 0) << " matched. TTS status: **" << me(str(doc, "tts_status")) << "**";
    if (!str(doc, "tts_reason").empty()) o << " (" << me(str(doc, "tts_reason")) << ")";
    o << ".\n";
    std::string no_audio, no_speak;
    for (const auto &s : at(t, "unmatched_speak")) no_audio += (no_audio.empty() ? "" : ", ") + str(s);
    for (const auto &s : at(t, "unmatched_audio")) no_speak += (no_speak.empty() ? "" : ", ") + str(s);
    if (!no_audio.empty()) o << "Speak turns without audio: " << me(no_audio) << ".\n";
    if (!no_speak.empty()) o << "Audio turns without a speak turn (index): " << me(no_speak) << ".\n";
    o << "\n";

    if (!at(doc, "pairs").empty()) {
        const json &fa = at(doc, "first_audio_ms"), &rtf = at(doc, "rtf");
        o << "### Per matched turn: [2] first audio, [3] RTF, [5] playback\n\n"
             "e2e = first playable wav - push of the turn's first frame + startup buffer; tts = first wav - t_done. "
             "TTS RTF = (last wav - min(t_done, first wav)) / audio; e2e RTF = (last wav - push) / audio.\n\n"
             "| turn | audio | push ms | done ms | first wav ms | e2e ms | tts ms | audio s | TTS RTF | e2e RTF "
             "| underrun ms | max gap ms | gaps | min startup buffer ms |\n"
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for (const auto &p : at(doc, "pairs")) {
            o << "| " << me(str(p, "label")) << " | " << fmt(num(p, "audio_turn"), 0) << " | " << fmt(num(p, "t_push_ms"), 0)
              << " | " << fmt(num(p, "t_done_ms"), 0) << " | " << fmt(num(p, "t_first_wav_ms"), 0) << " | "
              << fmt(num(p, "first_audio_e2e_ms"), 0) << " | " << fmt(num(p, "first_audio_tts_ms"), 0) << " | "
              << fmt(num(p, "audio_s"), 2) << " | " << fmt(num(p, "tts_rtf")) << " | " << fmt(num(p, "e2e_rtf")) << " | "
              << fmt(num(p, "underrun_ms"), 1) << " | " << fmt(num(p, "max_gap_ms"), 1) << " | " << fmt(num(p, "gaps"), 0)
              << " | " << fmt(num(p, "minimum_startup_buffer_ms"), 1) << " |\n";
        }
        o << "\nFirst audio e2e P50 " << fmt(num(fa, "e2e_p50"), 0) << " ms, P95 " << fmt(num(fa, "e2e_p95"), 0)
          << " ms; tts P50 " << fmt(num(fa, "tts_p50"), 0) << " ms, P95 " << fmt(num(fa, "tts_p95"), 0)
          << " ms. TTS RTF mean " << fmt(num(rtf, "tts_mean")) << ", max " << fmt(num(rtf, "tts_max")) << "; e2e RTF mean "
          << fmt(num(rtf, "e2e_mean")) << ".\n\n";
    }

    const json &ch = at(doc, "chunks");
    o << "### [4] Chunk durations (info)\n\n";
    if (num(ch, "n") > 0) {
        std::string finals;
        for (const auto &v : at(ch, "final_s")) finals += (finals.empty() ? "" : ", ") + fmt(num(v), 2);
        o << fmt(num(ch, "n"), 0) << " chunk(s), " << fmt(num(ch, "total_s"), 2) << " s of audio; min " << fmt(num(ch, "min_s"), 2)
          << " s, P50 " << fmt(num(ch, "p50_s"), 2) << " s, max " << fmt(num(ch, "max_s"), 2) << " s; is_final chunks: "
          << (finals.empty() ? "none" : finals + " s") << ".\n";
    } else {
        o << "No audio.\n";
    }
    return o.str();
}

}  // namespace rtf::report
