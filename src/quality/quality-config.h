#pragma once
// QualityConfig — every threshold the quality gates apply, in one struct (docs/method.md §6.2:
// a lower RTF with garbage output is a regression). Defaults are chosen for speech at
// 24 kHz from a TTS vocoder (MiniCPM-o 4.5's HiFT) and hold for 16 kHz too; every field
// states its unit, default and why. Zero-initialised knobs are not "off": use the
// documented switch (e.g. expect_speech = false) to disable a family of checks.
//
// Usage:
//   rtf::quality::QualityConfig cfg;            // defaults
//   cfg.set("max_clip_ratio", "0.01");          // by JSON key (CLI: --threshold k=v)
//   cfg.validate();                             // throws rtf::Error(Usage) naming the key
//   nlohmann::json j = cfg.to_json();           // every field, by the same keys
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rtf::quality {

struct QualityConfig {
    // ---- audio: signal sanity -------------------------------------------------------
    // NaN/Inf samples allowed (count). Default 0: one NaN means a numerically broken graph.
    double max_nonfinite = 0;
    // Largest |sample| allowed (linear, 1.0 = full scale). Default 1.0: float output above
    // full scale is clipped by every player and by 16-bit WAV.
    double max_peak = 1.0;
    // A sample counts as clipped when |x| >= clip_level (linear). Default 0.999 (≈ -0.01 dBFS),
    // so 16-bit full-scale codes (32767/32768) count.
    double clip_level = 0.999;
    // Share of clipped samples allowed (fraction). Default 0.001 (0.1 %): a loud but healthy
    // vocoder touches full scale on a few peaks, a saturated one on whole stretches.
    double max_clip_ratio = 0.001;
    // Overall RMS range (dBFS). Defaults -45 .. -6: TTS speech sits near -30 .. -15 dBFS;
    // below -45 is near-silent output, above -6 is a saturated or DC-stuck signal.
    double min_rms_dbfs = -45;
    double max_rms_dbfs = -6;
    // Largest |mean| allowed (linear). Default 0.02 (≈ -34 dBFS): a vocoder bias or a stuck
    // DC level shows up here; speech itself has mean ≈ 0.
    double max_dc_offset = 0.02;
    // Shortest output accepted (ms). Default 100 ms: anything shorter is not an utterance
    // (one audio token is 40 ms at 25 tokens/s).
    double min_duration_ms = 100;

    // ---- audio: silence --------------------------------------------------------------
    // Frame length for silence and level analysis (ms). Default 20 ms (two vocoder hops).
    double frame_ms = 20;
    // A frame is silent when its RMS < silence_dbfs (dBFS). Default -50 dBFS: below speech
    // pauses' breath noise of a TTS, above 16-bit dither.
    double silence_dbfs = -50;
    // Share of silent frames allowed (fraction). Default 0.6: speech with natural pauses is
    // 10-40 % silent; a vocoder that went quiet is mostly silent.
    double max_silence_ratio = 0.6;
    // Longest run of silent frames allowed (ms). Default 2000 ms: longer than any sentence
    // pause; a stalled chunk emitted as zeros (1 s per 25-token chunk) in a row is caught.
    double max_silence_ms = 2000;

    // ---- audio: speech-likeness (skipped when expect_speech = false, e.g. twin output) --
    // The audio is expected to be speech. Default true. Twin models (random weights) produce
    // noise by design: set false there and rely on the equivalence checks.
    bool expect_speech = true;
    // Median spectral flatness of non-silent frames allowed (0..1, geometric / arithmetic
    // mean of the power spectrum, 50 Hz .. 8 kHz). Default 0.35: voiced speech is < 0.1,
    // white noise ≈ 0.56 (e^-γ for a periodogram). Catches a vocoder that outputs noise.
    double max_flatness = 0.35;
    // Longest stretch that repeats itself with a fixed period (ms), found on log-mel frames
    // (10 ms hop) at periods 20 ms .. 2 s. Default 1000 ms: a sustained vowel lasts < 0.5 s;
    // a vocoder looping one token or frame repeats for seconds.
    double max_loop_ms = 1000;
    // Two log-mel frames are "the same" when their mean absolute difference is below this
    // (dB). Default 1.5 dB: repeated audio frames differ by < 0.5 dB, successive speech
    // frames by several dB.
    double loop_frame_db = 1.5;

    // ---- audio: chunk boundaries -----------------------------------------------------
    // A boundary is a discontinuity when |x[b] - x[b-1]| exceeds this many times the largest
    // sample-to-sample step within ±2.5 ms around it (ratio). Default 2: on flite speech at
    // 24 kHz every sample position measures <= 1.45 (p99.9 ≈ 1.25); a missing cross-fade or a
    // phase flip jumps by the waveform's amplitude, many times the local step.
    double max_boundary_jump_ratio = 2;
    // Jumps smaller than this are ignored whatever the ratio (linear). Default 0.02: inaudible
    // in speech, and the ratio is meaningless in near-silence.
    double min_boundary_jump = 0.02;

    // ---- token streams ---------------------------------------------------------------
    // Longest run of one token allowed (tokens). Default 32: a 1.3 s pause in audio tokens
    // (25/s) still passes; "????????" loops run to the limit.
    int max_token_run = 32;
    // Loop detector: looks at the last loop_tail tokens (tokens, default 48) and fails when a
    // unit of period <= loop_max_period (tokens, default 8) repeats back to back over at least
    // loop_min_coverage (fraction, default 0.75) of that tail and at least 3 times.
    int loop_tail = 48;
    int loop_max_period = 8;
    double loop_min_coverage = 0.75;

    // ---- equivalence against a baseline ----------------------------------------------
    // Mean log-spectral distance between candidate and baseline log-mel frames (dB, 80 bands,
    // 25 ms / 10 ms, floor 80 dB below the baseline's peak). Default 2 dB: F16 vs F32 or a
    // thread-count change moves it by well under 1 dB; a 6 dB gain change or another
    // utterance moves it by more than 5 dB.
    double max_log_mel_distance_db = 2;
    // |20 log10(RMS_candidate / RMS_baseline)| allowed (dB). Default 1 dB: the smallest level
    // change people notice; a math-preserving change keeps it near 0.
    double max_rms_ratio_db = 1;
    // |duration_candidate / duration_baseline - 1| allowed (fraction). Default 0.05.
    double max_duration_diff = 0.05;

    // ---- intelligibility -------------------------------------------------------------
    // Word error rate allowed against the reference text (percent). Default 35 %: flite's
    // voices score < 10 % with pocketsphinx's en-us model; unintelligible audio scores > 80 %.
    double max_wer_pct = 35;
    // The red line (docs/method.md §6.4): candidate WER may exceed the baseline's by at most this
    // (percentage points). Default 2.
    double max_wer_increase_pp = 2;

    // Throws rtf::Error(Usage) naming the key and the allowed range.
    void validate() const;
    nlohmann::json to_json() const;
    // Sets one field by its JSON key from text (CLI: --threshold key=value). Throws
    // rtf::Error(Usage) for an unknown key (listing the known ones) or a bad value.
    void set(const std::string &key, const std::string &value);
    static std::vector<std::string> keys();
};

}  // namespace rtf::quality
