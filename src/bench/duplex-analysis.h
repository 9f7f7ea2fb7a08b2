#pragma once
// Duplex run analyzer: is a recorded duplex session real time? (spec minicpmo45-speak-path.md
// §5.2-§5.3, the reference's analyze_perf.py). Reads the result JSON of a duplex run — ours
// (`rtf duplex`, later) or the reference's perf_report.json — and re-derives every figure
// from the raw timeline, so a stored run can be re-analysed with other thresholds.
//
//   auto a = bench::analyze_duplex(report::read_result("perf_report.json"), {});
//   std::cout << report::duplex_markdown(bench::to_json(a));   // five checks + verdict
//   return bench::exit_code(a.verdict);                        // 0 pass, 2 fail, 3 incomplete
//
// Where the spec's two reference versions differ, this follows **R3** (the stricter one):
// first audio counts the first *playable* chunk (duration_s > 0) and adds the startup buffer,
// TTS RTF must be < 1.0 on *every* matched turn (R1: on average), any unmatched speak or
// audio turn makes the TTS side incomplete, the playback check [5], the "no failed frames"
// check and the input validation exist (R1 has none of them). A speaking frame is one with
// is_speak true (R3); R1's `is_speak && !is_idle` only decides the run's speak_turn_id.
// Generation-side only: no network, no real player — a pass says the recorded timeline could
// be played in real time, not that a remote client heard it so.
//
// ## Input (§5.1; missing arrays are empty, missing meta keys take the defaults below)
//   meta.stream_interval_ms   the frame interval, the threshold of [1] and [2] (default 1000;
//                             overridden by DuplexOptions::interval_ms)
//   meta.use_tts              false = a --no-tts run: the audio side is skipped (default true)
//   meta.{llm_path, vision_backend, media_type, n_threads, sample_rate_hint}  shown only
//   frames[]        {t_push_ms, t_done_ms, ms_total, ms_decode, ok, is_speak, speak_turn_id?, ...}
//   audio_chunks[]  {t_complete_ms, duration_s, is_final, audio_turn_id?, n_samples, sample_rate}
// All times are ms on one session clock; duration_s in seconds.
//
// ## Validation (R3) — any failure makes the run INCOMPLETE (exit 3), naming the row and key
// top level, meta, frames[i], audio_chunks[i] are objects / arrays; meta.use_tts boolean if
// present; t_push_ms, t_done_ms, ms_total, ms_decode, t_complete_ms, duration_s finite and
// >= 0 (a JSON boolean is not a number); frames ordered by t_push_ms and chunks by
// t_complete_ms (ties allowed); t_done_ms >= t_push_ms; ok, is_speak, is_final booleans
// (is_idle too, where present); speak_turn_id an integer and audio_turn_id a non-negative
// integer where present; audio_turn_id on every chunk or on none; a turn id that returns
// after another turn started (interleaved turns) is rejected; every audio turn ends with its
// only is_final chunk and has a positive total duration; the total audio fits in ms.
// Thresholds (DuplexOptions) are checked separately and throw rtf::Error(Usage) naming the
// flag — a bad flag is a usage error (exit 1), not a property of the run (R3 says incomplete).
//
// ## Turns and matching
// Speak turn: a maximal run of consecutive frames with is_speak true, labelled "speak#ID"
// (speak_turn_id of its first frame when >= 0) or "speak@K" (its index). Audio turn: the
// chunks sharing an audio_turn_id (in order of first appearance), or without ids the chunks
// up to and including each is_final. Matching by time, not by index: for each audio turn in
// order, t_first = t_complete_ms of its first chunk with duration_s > 0; every not yet used
// speak turn whose first frame's t_push_ms <= t_first is consumed, the latest of them is the
// match and the earlier ones are "no audio" (unmatched speak). An audio turn with no such
// speak turn is unmatched audio; speak turns left at the end are unmatched speak.
//
// ## Metrics (per matched pair: speak turn S, audio turn A; t_push / t_done of S's first frame)
// [1] decision latency: ms_total of the ok frames (push -> LISTEN/SPEAK decision dequeued):
//     P50 / P95 / max, mean ms_decode. PASS iff P95 < interval. SKIP without ok frames.
// [2] first audio: e2e = t_first - t_push + startup_buffer_ms (the buffer delays the first
//     sound, so it cannot hide here what it buys in [5]); tts = t_first - t_done (shown only).
//     PASS iff P95(e2e) < interval.
// [3] RTF: audio_s = sum of A's duration_s; tts_wall = t_last - min(t_done, t_first)
//     (t_last: A's last playable chunk; the min keeps the wall positive when the audio
//     callback fired before the decision was dequeued), e2e_wall = t_last - t_push, both
//     floored at 1 µs; RTF = wall / audio_s. PASS iff every pair's TTS RTF < 1.0 (R3); the
//     mean TTS RTF (R1's rule) and the e2e RTF are info.
// [4] chunks (info): count, total s, min / P50 / max duration, the is_final chunks' durations.
// [5] playback per pair over A's chunks with duration_s > 0 (prof::simulate_playback, whose
//     timeline equals §5.2 [5] clause by clause): playback starts at the first chunk + the
//     startup buffer and plays back to back; a chunk that is not ready when the audio runs
//     dry leaves a gap, then playback resumes at its arrival. underrun_ms = sum of gaps,
//     max_gap_ms, gaps = count of gaps > 1e-6 ms, minimum_startup_buffer_ms = max over
//     chunks of (ready - first ready - sum of the previous durations), the buffer that would
//     have avoided every gap. PASS iff every pair's max gap <= max_gap_ms (+1e-6 ms for
//     float residue, as R3).
// No failed frames: PASS iff no frame has ok false (SKIP without frames) — a failed frame
// must not hide behind the latency of the ones that succeeded.
// Percentiles: prof::percentile (sorted, linear interpolation at (n-1)·p/100, the spec's method).
// Per-pair figures are computed whenever the input is valid; checks [2] [3] [5] are evaluated
// only when the TTS status is ok (else SKIP).
//
// ## TTS status and verdict (§5.3)
// TTS status: skipped if use_tts is false or no frame speaks; incomplete if frames speak but
// there is no audio, no match, or any unmatched speak or audio turn (R3); else ok (demoted to
// incomplete if no matched pair has audio — unreachable once validation passed).
// Verdict, first rule that applies:
//   input invalid                                   -> incomplete
//   TTS incomplete, or use_tts false                -> fail if any check failed, else incomplete
//   no frame speaks (all LISTEN)                    -> fail if any check failed, else incomplete
//   no check evaluated                              -> incomplete
//   every evaluated check passes                    -> pass
//   otherwise                                       -> fail
// Exit codes (exit_code): pass 0, fail 2, incomplete 3 (an unreadable file is incomplete too).
// Thread-safety: pure functions.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rtf::bench {

struct DuplexOptions {
    // The decision / first-audio threshold, ms (> 0); empty = meta.stream_interval_ms, else 1000.
    std::optional<double> interval_ms;
    double startup_buffer_ms = 0;  // playback starts this long after the first playable chunk (>= 0)
    double max_gap_ms = 0;         // largest tolerated playback gap, ms (>= 0)
};

// Throws rtf::Error(Usage) naming --interval-ms / --startup-buffer-ms / --max-gap-ms when a
// value is not finite, negative, or (interval) zero.
void validate(const DuplexOptions &o);

enum class DuplexVerdict { Pass, Fail, Incomplete };
enum class CheckState { Skip, Pass, Fail };
enum class TtsStatus { Ok, Skipped, Incomplete };

const char *to_string(DuplexVerdict v);  // "pass" / "fail" / "incomplete"
const char *to_string(CheckState s);     // "SKIP" / "PASS" / "FAIL"
const char *to_string(TtsStatus s);      // "ok" / "skipped" / "incomplete"
int exit_code(DuplexVerdict v);          // 0 / 2 / 3

struct Check {
    std::string id;      // "decision_latency", "first_audio", "tts_rtf", "no_failed_frames", "playback"
    std::string rule;    // the rule with this run's figures, e.g. "P95 812.0 ms < interval 1000 ms"
    CheckState state = CheckState::Skip;
};

struct PairMetrics {
    int speak_turn = 0;      // index into the speak turns
    int audio_turn = 0;      // index into the audio turns
    std::string label;       // "speak#3" or "speak@1"
    double t_push_ms = 0, t_done_ms = 0;           // the speak turn's first frame
    double t_first_wav_ms = 0, t_last_wav_ms = 0;  // first / last playable chunk of the audio turn
    double first_audio_e2e_ms = 0;  // t_first - t_push + startup buffer
    double first_audio_tts_ms = 0;  // t_first - t_done
    double audio_s = 0;
    double tts_wall_s = 0, tts_rtf = 0, e2e_wall_s = 0, e2e_rtf = 0;
    int n_chunks = 0;
    double underrun_ms = 0, max_gap_ms = 0, minimum_startup_buffer_ms = 0;
    int gaps = 0;
};

struct DuplexAnalysis {
    std::string source;                  // the input file, when known
    bool valid = false;
    std::string invalid_reason;          // why the input cannot be judged (valid false)
    DuplexOptions options;               // as given
    double interval_ms = 1000;           // the threshold used
    std::string interval_from;           // "flag", "meta" or "default"
    nlohmann::json meta;                 // the input's meta (shown)
    bool use_tts = true;

    int n_frames = 0, n_speak = 0, n_listen = 0, n_failed = 0, n_ok = 0;
    // [1] over the ok frames; NaN when none.
    double decision_p50_ms = 0, decision_p95_ms = 0, decision_max_ms = 0, decode_mean_ms = 0;

    int n_speak_turns = 0, n_audio_turns = 0;
    std::vector<std::string> unmatched_speak;  // labels of speak turns without audio
    std::vector<int> unmatched_audio;          // indexes of audio turns without a speak turn
    std::vector<PairMetrics> pairs;

    TtsStatus tts_status = TtsStatus::Skipped;
    std::string tts_reason;                    // why the audio side was not judged

    // [2] [3] over the pairs; NaN when none.
    double first_audio_e2e_p50_ms = 0, first_audio_e2e_p95_ms = 0;
    double first_audio_tts_p50_ms = 0, first_audio_tts_p95_ms = 0;
    double tts_rtf_mean = 0, tts_rtf_max = 0, e2e_rtf_mean = 0;

    // [4] over every chunk; NaN when none.
    int n_chunks = 0;
    double audio_total_s = 0, chunk_min_s = 0, chunk_p50_s = 0, chunk_max_s = 0;
    std::vector<double> final_chunk_s;

    std::vector<Check> checks;  // the five, in the order above ([1], [2], [3], no failed frames, [5])
    DuplexVerdict verdict = DuplexVerdict::Incomplete;
    std::string summary;        // one sentence: why this verdict
};

// Never throws for the content of `report` (invalid -> incomplete with the reason); throws
// rtf::Error(Usage) only for bad options (validate()).
DuplexAnalysis analyze_duplex(const nlohmann::json &report, const DuplexOptions &o);

// The verdict for an input that could not be read or parsed (`reason` names the file).
DuplexAnalysis unreadable_duplex(const std::string &source, const std::string &reason, const DuplexOptions &o);

// Schema rtfkit.duplex-report/1, rendered by report::duplex_markdown: {"schema", "rules": "R3",
// "source", "valid", "invalid_reason", "options", "interval_ms", "interval_from", "meta",
// "frames": {n, speak, listen, ok, failed}, "decision_latency_ms": {p50, p95, max, decode_mean},
// "turns": {speak, audio, matched, unmatched_speak, unmatched_audio}, "tts_status", "tts_reason",
// "pairs": [PairMetrics...], "first_audio_ms": {e2e_p50, e2e_p95, tts_p50, tts_p95},
// "rtf": {tts_mean, tts_max, e2e_mean}, "chunks": {n, total_s, min_s, p50_s, max_s, final_s},
// "checks": [{id, state, rule}], "verdict", "summary", "exit_code"}. NaN -> null.
nlohmann::json to_json(const DuplexAnalysis &a);

}  // namespace rtf::bench
