#include "bench/duplex-analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/format.h"
#include "profile/playback.h"
#include "profile/stats.h"

namespace rtf::bench {

using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Gaps below this are float residue of summed durations, not silence (R3's threshold).
constexpr double kGapEpsMs = 1e-6;

const json &empty_array() {
    static const json a = json::array();
    return a;
}
const json &empty_object() {
    static const json o = json::object();
    return o;
}

// r[key], or an empty array when absent (a missing array is an empty one, §5.1's "none").
const json &rows(const json &r, const char *key) { return r.contains(key) ? r.at(key) : empty_array(); }

bool finite_number(const json &v) { return v.is_number() && std::isfinite(v.get<double>()); }

double d(const json &row, const char *key) { return row.at(key).get<double>(); }

std::string row_name(const char *field, size_t i) { return std::string(field) + "[" + std::to_string(i) + "]"; }

// A speak turn: frames [first, last], all with is_speak true.
struct SpeakTurn {
    size_t first = 0, last = 0;
};
using AudioTurn = std::vector<const json *>;

std::vector<SpeakTurn> speak_turns(const json &frames) {
    std::vector<SpeakTurn> turns;
    bool open = false;
    for (size_t i = 0; i < frames.size(); ++i) {
        if (frames[i].at("is_speak").get<bool>()) {
            if (!open) turns.push_back({i, i});
            turns.back().last = i;
            open = true;
        } else {
            open = false;
        }
    }
    return turns;
}

bool all_have_turn_id(const json &audio) {
    return std::all_of(audio.begin(), audio.end(), [](const json &c) { return c.contains("audio_turn_id"); });
}

// By audio_turn_id in order of first appearance when every chunk has one (the run increments
// it after each is_final), else split after each is_final (older files without ids).
std::vector<AudioTurn> audio_turns(const json &audio) {
    std::vector<AudioTurn> turns;
    if (!audio.empty() && all_have_turn_id(audio)) {
        std::map<int64_t, size_t> index;
        for (const auto &c : audio) {
            auto id = c.at("audio_turn_id").get<int64_t>();
            auto [it, inserted] = index.emplace(id, turns.size());
            if (inserted) turns.emplace_back();
            turns[it->second].push_back(&c);
        }
        return turns;
    }
    AudioTurn cur;
    for (const auto &c : audio) {
        cur.push_back(&c);
        if (c.at("is_final").get<bool>()) turns.push_back(std::exchange(cur, {}));
    }
    if (!cur.empty()) turns.push_back(cur);
    return turns;
}

AudioTurn playable(const AudioTurn &t) {
    AudioTurn p;
    for (const json *c : t)
        if (d(*c, "duration_s") > 0) p.push_back(c);
    return p;
}

// §5.2's validation (R3): the first problem found, or "" when the report can be judged.
std::string validate_input(const json &r) {
    if (!r.is_object()) return "the report must be a JSON object";
    if (r.contains("meta") && !r.at("meta").is_object()) return "meta must be an object";
    const json &meta = r.contains("meta") ? r.at("meta") : empty_object();
    if (meta.contains("use_tts") && !meta.at("use_tts").is_boolean()) return "meta.use_tts must be a boolean";
    struct Field {
        const char *name, *time_key;
        std::vector<const char *> numbers;
    };
    const Field fields[] = {{"frames", "t_push_ms", {"t_push_ms", "t_done_ms", "ms_total", "ms_decode"}},
                            {"audio_chunks", "t_complete_ms", {"t_complete_ms", "duration_s"}}};
    for (const auto &f : fields) {
        if (r.contains(f.name) && !r.at(f.name).is_array()) return std::string(f.name) + " must be an array";
        const json &a = rows(r, f.name);
        double previous = -1;
        for (size_t i = 0; i < a.size(); ++i) {
            const json &row = a[i];
            const std::string name = row_name(f.name, i);
            if (!row.is_object()) return name + " must be an object";
            for (const char *key : f.numbers) {
                if (!row.contains(key) || !finite_number(row.at(key)) || d(row, key) < 0)
                    return name + "." + key + " must be a finite non-negative number";
            }
            if (d(row, f.time_key) < previous)
                return std::string(f.name) + " must be in recorded order (" + name + "." + f.time_key + " " +
                       fmt(d(row, f.time_key), 1) + " < " + fmt(previous, 1) + " before it)";
            previous = d(row, f.time_key);
            if (std::string(f.name) == "frames") {
                for (const char *key : {"ok", "is_speak"})
                    if (!row.contains(key) || !row.at(key).is_boolean()) return name + "." + key + " must be a boolean";
                if (row.contains("is_idle") && !row.at("is_idle").is_boolean()) return name + ".is_idle must be a boolean";
                if (d(row, "t_done_ms") < d(row, "t_push_ms")) return name + " completes (t_done_ms) before it was pushed (t_push_ms)";
                if (row.contains("speak_turn_id") && !row.at("speak_turn_id").is_number_integer())
                    return name + ".speak_turn_id must be an integer";
            } else {
                if (!row.contains("is_final") || !row.at("is_final").is_boolean()) return name + ".is_final must be a boolean";
                if (row.contains("audio_turn_id")) {
                    const json &id = row.at("audio_turn_id");
                    if (!id.is_number_integer() || id.get<int64_t>() < 0)
                        return name + ".audio_turn_id must be a non-negative integer";
                }
            }
        }
    }
    const json &audio = rows(r, "audio_chunks");
    double total_ms = 0;
    for (const auto &c : audio) total_ms += d(c, "duration_s") * 1000;
    if (!std::isfinite(total_ms)) return "the total audio duration overflows milliseconds";
    bool any_id = std::any_of(audio.begin(), audio.end(), [](const json &c) { return c.contains("audio_turn_id"); });
    if (any_id && !all_have_turn_id(audio)) return "audio_turn_id is on some audio chunks but not all";
    if (any_id) {
        std::set<int64_t> closed;
        int64_t current = audio[0].at("audio_turn_id").get<int64_t>();
        for (size_t i = 0; i < audio.size(); ++i) {
            int64_t id = audio[i].at("audio_turn_id").get<int64_t>();
            if (id == current) continue;
            closed.insert(current);
            if (closed.count(id))
                return row_name("audio_chunks", i) + ": audio turn " + std::to_string(id) +
                       " resumes after another turn started (interleaved turns cannot be reconstructed)";
            current = id;
        }
    }
    int k = 0;
    for (const auto &t : audio_turns(audio)) {
        const bool early_final = std::any_of(t.begin(), t.end() - 1, [](const json *c) { return c->at("is_final").get<bool>(); });
        if (!t.back()->at("is_final").get<bool>() || early_final)
            return "audio turn " + std::to_string(k) + " is unclosed or has is_final before its last chunk";
        double s = 0;
        for (const json *c : t) s += d(*c, "duration_s");
        if (!(s > 0)) return "audio turn " + std::to_string(k) + " has no playable audio (total duration_s 0)";
        ++k;
    }
    return "";
}

std::string fmt_ms(double v) { return fmt(v, 1) + " ms"; }
// A threshold as given: "1000 ms", "950.5 ms" (never rounded onto the other side of a figure).
std::string fmt_limit_ms(double v) { return fmt(v, v == std::floor(v) ? 0 : 3) + " ms"; }

double mean(const std::vector<double> &v) {
    return v.empty() ? kNaN : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double max_of(const std::vector<double> &v) { return v.empty() ? kNaN : *std::max_element(v.begin(), v.end()); }

std::vector<Check> skipped_checks(const std::string &why) {
    std::vector<Check> c;
    for (const char *id : {"decision_latency", "first_audio", "tts_rtf", "no_failed_frames", "playback"})
        c.push_back({id, why, CheckState::Skip});
    return c;
}

// [5] for one audio turn. The timeline is prof::simulate_playback's, which equals §5.2 [5]
// clause by clause (start at first ready + buffer; gap = max(0, ready - end); end = max(end,
// ready) + duration); what §5.2 adds on top is computed here: the gap count ignores float
// residue (> 1e-6 ms, where simulate_playback counts any gap > 0), and the minimum startup
// buffer (playback.h's min_startup_buffer_ms: the schedule without resumes, every chunk played
// back to back from the first ready, not the simulated one).
void playback(const AudioTurn &chunks, double startup_buffer_ms, PairMetrics &p) {
    std::vector<double> ready, dur;
    for (const json *c : chunks) {
        ready.push_back(d(*c, "t_complete_ms"));
        dur.push_back(d(*c, "duration_s") * 1000);
    }
    const auto s = prof::simulate_playback(ready, dur, startup_buffer_ms);
    p.underrun_ms = s.total_ms;
    p.max_gap_ms = 0;
    p.gaps = 0;
    for (const auto &g : s.gaps) {
        p.max_gap_ms = std::max(p.max_gap_ms, g.length_ms);
        if (g.length_ms > kGapEpsMs) ++p.gaps;
    }
    p.minimum_startup_buffer_ms = prof::min_startup_buffer_ms(ready, dur);
}

}  // namespace

void validate(const DuplexOptions &o) {
    if (o.interval_ms && !(std::isfinite(*o.interval_ms) && *o.interval_ms > 0))
        throw_usage("--interval-ms: " + fmt(*o.interval_ms, 1) + " is not a positive number of milliseconds");
    if (!(std::isfinite(o.startup_buffer_ms) && o.startup_buffer_ms >= 0))
        throw_usage("--startup-buffer-ms: " + fmt(o.startup_buffer_ms, 1) + " must be finite and >= 0");
    if (!(std::isfinite(o.max_gap_ms) && o.max_gap_ms >= 0))
        throw_usage("--max-gap-ms: " + fmt(o.max_gap_ms, 1) + " must be finite and >= 0");
}

const char *to_string(DuplexVerdict v) {
    switch (v) {
        case DuplexVerdict::Pass: return "pass";
        case DuplexVerdict::Fail: return "fail";
        case DuplexVerdict::Incomplete: return "incomplete";
    }
    return "?";
}
const char *to_string(CheckState s) {
    switch (s) {
        case CheckState::Skip: return "SKIP";
        case CheckState::Pass: return "PASS";
        case CheckState::Fail: return "FAIL";
    }
    return "?";
}
const char *to_string(TtsStatus s) {
    switch (s) {
        case TtsStatus::Ok: return "ok";
        case TtsStatus::Skipped: return "skipped";
        case TtsStatus::Incomplete: return "incomplete";
    }
    return "?";
}
int exit_code(DuplexVerdict v) {
    switch (v) {
        case DuplexVerdict::Pass: return 0;
        case DuplexVerdict::Fail: return 2;
        case DuplexVerdict::Incomplete: return 3;
    }
    return 3;
}

DuplexAnalysis unreadable_duplex(const std::string &source, const std::string &reason, const DuplexOptions &o) {
    DuplexAnalysis a;
    a.source = source;
    a.options = o;
    a.interval_ms = o.interval_ms ? *o.interval_ms : kNaN;
    a.interval_from = o.interval_ms ? "flag" : "";
    a.invalid_reason = reason;
    a.tts_status = TtsStatus::Incomplete;
    a.tts_reason = "input unreadable";
    a.checks = skipped_checks("not judged: input unreadable");
    a.verdict = DuplexVerdict::Incomplete;
    a.summary = "incomplete: " + reason;
    return a;
}

namespace {

// The frame interval the checks use: --interval-ms, else the run's meta, else 1000 ms.
void resolve_interval(DuplexAnalysis &a, const json &meta, const DuplexOptions &o) {
    if (o.interval_ms) {
        a.interval_ms = *o.interval_ms;
        a.interval_from = "flag";
    } else if (meta.contains("stream_interval_ms")) {
        a.interval_from = "meta";
        const json &v = meta.at("stream_interval_ms");
        a.interval_ms = finite_number(v) ? v.get<double>() : kNaN;
    } else {
        a.interval_ms = 1000;
        a.interval_from = "default";
    }
}

// Decision latency and outcome counts over the frames.
void frame_stats(DuplexAnalysis &a, const json &frames) {
    a.n_frames = static_cast<int>(frames.size());
    std::vector<double> ms_total, ms_decode;
    for (const auto &f : frames) {
        const bool ok = f.at("ok").get<bool>();
        a.n_speak += f.at("is_speak").get<bool>();
        a.n_failed += !ok;
        if (ok) {
            ms_total.push_back(d(f, "ms_total"));
            ms_decode.push_back(d(f, "ms_decode"));
        }
    }
    a.n_listen = a.n_frames - a.n_speak;
    a.n_ok = static_cast<int>(ms_total.size());
    a.decision_p50_ms = prof::percentile(ms_total, 50);
    a.decision_p95_ms = prof::percentile(ms_total, 95);
    a.decision_max_ms = max_of(ms_total);
    a.decode_mean_ms = mean(ms_decode);
}

// Speak turns matched with audio turns by time: each audio turn goes to the latest speak
// turn pushed before its first playable chunk; what stays alone is listed as unmatched.
void match_turns(DuplexAnalysis &a, const json &frames, const json &audio, const DuplexOptions &o) {
    const auto st = speak_turns(frames);
    const auto at = audio_turns(audio);
    a.n_speak_turns = static_cast<int>(st.size());
    a.n_audio_turns = static_cast<int>(at.size());
    auto label = [&](size_t k) {
        const json &f = frames[st[k].first];
        if (f.contains("speak_turn_id") && f.at("speak_turn_id").get<int64_t>() >= 0)
            return "speak#" + std::to_string(f.at("speak_turn_id").get<int64_t>());
        return "speak@" + std::to_string(k);
    };
    size_t next = 0;
    for (size_t ai = 0; ai < at.size(); ++ai) {
        const AudioTurn play = playable(at[ai]);  // never empty: validation wants a positive total
        const double t_first = d(*play.front(), "t_complete_ms");
        std::optional<size_t> candidate;
        for (; next < st.size() && d(frames[st[next].first], "t_push_ms") <= t_first; ++next) {
            if (candidate) a.unmatched_speak.push_back(label(*candidate));
            candidate = next;
        }
        if (!candidate) {
            a.unmatched_audio.push_back(static_cast<int>(ai));
            continue;
        }
        PairMetrics p;
        p.speak_turn = static_cast<int>(*candidate);
        p.audio_turn = static_cast<int>(ai);
        p.label = label(*candidate);
        const json &f0 = frames[st[*candidate].first];
        p.t_push_ms = d(f0, "t_push_ms");
        p.t_done_ms = d(f0, "t_done_ms");
        p.t_first_wav_ms = t_first;
        p.t_last_wav_ms = d(*play.back(), "t_complete_ms");
        p.first_audio_e2e_ms = t_first - p.t_push_ms + o.startup_buffer_ms;
        p.first_audio_tts_ms = t_first - p.t_done_ms;
        for (const json *c : at[ai]) p.audio_s += d(*c, "duration_s");
        p.n_chunks = static_cast<int>(play.size());
        p.tts_wall_s = std::max(1e-6, (p.t_last_wav_ms - std::min(p.t_done_ms, t_first)) / 1000.0);
        p.e2e_wall_s = std::max(1e-6, (p.t_last_wav_ms - p.t_push_ms) / 1000.0);
        p.tts_rtf = p.audio_s > 0 ? p.tts_wall_s / p.audio_s : kNaN;
        p.e2e_rtf = p.audio_s > 0 ? p.e2e_wall_s / p.audio_s : kNaN;
        playback(play, o.startup_buffer_ms, p);
        a.pairs.push_back(p);
    }
    for (; next < st.size(); ++next) a.unmatched_speak.push_back(label(next));
}

// Per-turn first audio and RTF over the matched pairs; returns the turns' TTS RTFs (turns with audio).
std::vector<double> turn_stats(DuplexAnalysis &a) {
    std::vector<double> e2e, tts, tts_rtf, e2e_rtf;
    for (const auto &p : a.pairs) {
        e2e.push_back(p.first_audio_e2e_ms);
        tts.push_back(p.first_audio_tts_ms);
        if (p.audio_s > 0) {
            tts_rtf.push_back(p.tts_rtf);
            e2e_rtf.push_back(p.e2e_rtf);
        }
    }
    a.first_audio_e2e_p50_ms = prof::percentile(e2e, 50);
    a.first_audio_e2e_p95_ms = prof::percentile(e2e, 95);
    a.first_audio_tts_p50_ms = prof::percentile(tts, 50);
    a.first_audio_tts_p95_ms = prof::percentile(tts, 95);
    a.tts_rtf_mean = mean(tts_rtf);
    a.tts_rtf_max = max_of(tts_rtf);
    a.e2e_rtf_mean = mean(e2e_rtf);
    return tts_rtf;
}

// Chunk durations over the whole run.
void chunk_stats(DuplexAnalysis &a, const json &audio) {
    std::vector<double> durs;
    for (const auto &c : audio) {
        durs.push_back(d(c, "duration_s"));
        if (c.at("is_final").get<bool>()) a.final_chunk_s.push_back(d(c, "duration_s"));
    }
    a.n_chunks = static_cast<int>(durs.size());
    a.audio_total_s = std::accumulate(durs.begin(), durs.end(), 0.0);
    a.chunk_min_s = durs.empty() ? kNaN : *std::min_element(durs.begin(), durs.end());
    a.chunk_p50_s = prof::percentile(durs, 50);
    a.chunk_max_s = max_of(durs);
}

// Whether the audio side can be judged (§5.3).
void judge_tts_status(DuplexAnalysis &a, const json &audio, const std::vector<double> &tts_rtf) {
    if (!a.use_tts) {
        a.tts_status = TtsStatus::Skipped;
        a.tts_reason = "use_tts is false (--no-tts): the audio side is not judged";
    } else if (a.n_speak == 0) {
        a.tts_status = TtsStatus::Skipped;
        a.tts_reason = "every frame is LISTEN: no speak turn, the audio side is not judged";
    } else if (audio.empty() || a.pairs.empty() || !a.unmatched_speak.empty() || !a.unmatched_audio.empty()) {
        a.tts_status = TtsStatus::Incomplete;
        a.tts_reason = audio.empty()         ? "frames speak but the run recorded no audio"
                       : a.pairs.empty()     ? "no audio turn matches a speak turn"
                                             : "speak/audio coverage incomplete: " +
                                                   std::to_string(a.unmatched_speak.size()) + " speak turn(s) without audio, " +
                                                   std::to_string(a.unmatched_audio.size()) + " audio turn(s) without a speak turn";
    } else if (tts_rtf.empty()) {
        a.tts_status = TtsStatus::Incomplete;
        a.tts_reason = "every matched audio turn is 0 s long";
    } else {
        a.tts_status = TtsStatus::Ok;
    }
}

// The five checks.
void run_checks(DuplexAnalysis &a, const DuplexOptions &o) {
    const bool tts_ok = a.tts_status == TtsStatus::Ok;
    const std::string interval = fmt_limit_ms(a.interval_ms);

    // The five checks.
    Check c1{"decision_latency", "no ok frame", CheckState::Skip};
    if (a.n_ok > 0) {
        c1.rule = "P95 " + fmt_ms(a.decision_p95_ms) + " < interval " + interval;
        c1.state = a.decision_p95_ms < a.interval_ms ? CheckState::Pass : CheckState::Fail;
    }
    Check c2{"first_audio", a.tts_reason, CheckState::Skip};
    Check c3{"tts_rtf", a.tts_reason, CheckState::Skip};
    Check c5{"playback", a.tts_reason, CheckState::Skip};
    if (tts_ok) {
        c2.rule = "P95 e2e " + fmt_ms(a.first_audio_e2e_p95_ms) + " (startup buffer " + fmt_limit_ms(o.startup_buffer_ms) +
                  " included) < interval " + interval;
        c2.state = a.first_audio_e2e_p95_ms < a.interval_ms ? CheckState::Pass : CheckState::Fail;
        c3.rule = "every turn's TTS RTF < 1.0 (max " + fmt(a.tts_rtf_max) + ", mean " + fmt(a.tts_rtf_mean) + ")";
        c3.state = a.tts_rtf_max < 1.0 ? CheckState::Pass : CheckState::Fail;
        double worst = 0;
        for (const auto &p : a.pairs) worst = std::max(worst, p.max_gap_ms);
        c5.rule = "every turn's max gap <= " + fmt_limit_ms(o.max_gap_ms) + " (worst " + fmt_ms(worst) + ", startup buffer " +
                  fmt_limit_ms(o.startup_buffer_ms) + ")";
        c5.state = worst <= o.max_gap_ms + kGapEpsMs ? CheckState::Pass : CheckState::Fail;
    }
    Check c4{"no_failed_frames", "no frame", CheckState::Skip};
    if (a.n_frames > 0) {
        c4.rule = std::to_string(a.n_failed) + " of " + std::to_string(a.n_frames) + " frames failed";
        c4.state = a.n_failed == 0 ? CheckState::Pass : CheckState::Fail;
    }
    a.checks = {c1, c2, c3, c4, c5};
}

// The verdict (§5.3): the first rule that applies.
void decide(DuplexAnalysis &a) {
    const bool any_fail = std::any_of(a.checks.begin(), a.checks.end(), [](const Check &c) { return c.state == CheckState::Fail; });
    const bool any_evaluated = std::any_of(a.checks.begin(), a.checks.end(), [](const Check &c) { return c.state != CheckState::Skip; });
    if (a.tts_status == TtsStatus::Incomplete || (a.tts_status == TtsStatus::Skipped && !a.use_tts)) {
        a.verdict = any_fail ? DuplexVerdict::Fail : DuplexVerdict::Incomplete;
        a.summary = any_fail ? "fail: a real-time check failed (and the audio side is " + std::string(to_string(a.tts_status)) + ")"
                             : "incomplete: " + a.tts_reason + "; duplex feasibility not shown";
    } else if (a.tts_status == TtsStatus::Skipped) {  // all LISTEN
        a.verdict = any_fail ? DuplexVerdict::Fail : DuplexVerdict::Incomplete;
        a.summary = any_fail ? "fail: a real-time check failed"
                             : "incomplete: every frame is LISTEN, speak/TTS not covered; duplex feasibility not shown";
    } else if (!any_evaluated) {
        a.verdict = DuplexVerdict::Incomplete;
        a.summary = "incomplete: no check could be evaluated";
    } else if (!any_fail) {
        a.verdict = DuplexVerdict::Pass;
        a.summary = "pass: the recorded generation timeline meets the duplex real-time checks "
                    "(network and real playback still need an end-to-end test)";
    } else {
        a.verdict = DuplexVerdict::Fail;
        a.summary = "fail: this run does not meet the duplex real-time checks";
    }
}

}  // namespace

DuplexAnalysis analyze_duplex(const json &r, const DuplexOptions &o) {
    validate(o);
    DuplexAnalysis a;
    a.options = o;
    if (r.is_object() && r.contains("meta") && r.at("meta").is_object()) a.meta = r.at("meta");
    const std::string bad = validate_input(r);
    const json &meta = a.meta.is_object() ? a.meta : empty_object();
    if (bad.empty()) resolve_interval(a, meta, o);
    a.invalid_reason = !bad.empty() ? bad
                       : !(a.interval_ms > 0) ? "meta.stream_interval_ms must be a finite positive number (or pass --interval-ms)"
                                              : "";
    if (!a.invalid_reason.empty()) {
        a.tts_status = TtsStatus::Incomplete;
        a.tts_reason = "input invalid";
        a.checks = skipped_checks("not judged: input invalid");
        a.verdict = DuplexVerdict::Incomplete;
        a.summary = "incomplete: input invalid: " + a.invalid_reason;
        return a;
    }
    a.valid = true;
    a.use_tts = meta.contains("use_tts") ? meta.at("use_tts").get<bool>() : true;

    const json &frames = rows(r, "frames");
    const json &audio = rows(r, "audio_chunks");
    frame_stats(a, frames);
    match_turns(a, frames, audio, o);
    const std::vector<double> tts_rtf = turn_stats(a);
    chunk_stats(a, audio);
    judge_tts_status(a, audio, tts_rtf);
    run_checks(a, o);
    decide(a);
    return a;
}

json to_json(const DuplexAnalysis &a) {
    using prof::json_number;
    json pairs = json::array();
    for (const auto &p : a.pairs) {
        pairs.push_back({{"speak_turn", p.speak_turn},
                         {"audio_turn", p.audio_turn},
                         {"label", p.label},
                         {"t_push_ms", p.t_push_ms},
                         {"t_done_ms", p.t_done_ms},
                         {"t_first_wav_ms", p.t_first_wav_ms},
                         {"t_last_wav_ms", p.t_last_wav_ms},
                         {"first_audio_e2e_ms", p.first_audio_e2e_ms},
                         {"first_audio_tts_ms", p.first_audio_tts_ms},
                         {"audio_s", p.audio_s},
                         {"n_chunks", p.n_chunks},
                         {"tts_wall_s", p.tts_wall_s},
                         {"tts_rtf", json_number(p.tts_rtf)},
                         {"e2e_wall_s", p.e2e_wall_s},
                         {"e2e_rtf", json_number(p.e2e_rtf)},
                         {"underrun_ms", p.underrun_ms},
                         {"max_gap_ms", p.max_gap_ms},
                         {"gaps", p.gaps},
                         {"minimum_startup_buffer_ms", p.minimum_startup_buffer_ms}});
    }
    json checks = json::array();
    for (const auto &c : a.checks) checks.push_back({{"id", c.id}, {"state", to_string(c.state)}, {"rule", c.rule}});
    json options = {{"startup_buffer_ms", a.options.startup_buffer_ms}, {"max_gap_ms", a.options.max_gap_ms}};
    options["interval_ms"] = a.options.interval_ms ? json(*a.options.interval_ms) : json(nullptr);
    return {{"schema", "rtfkit.duplex-report/1"},
            {"rules", "R3"},
            {"source", a.source},
            {"valid", a.valid},
            {"invalid_reason", a.invalid_reason},
            {"options", options},
            {"interval_ms", json_number(a.interval_ms)},
            {"interval_from", a.interval_from},
            {"meta", a.meta.is_object() ? a.meta : json::object()},
            {"use_tts", a.use_tts},
            {"frames", {{"n", a.n_frames}, {"speak", a.n_speak}, {"listen", a.n_listen}, {"ok", a.n_ok}, {"failed", a.n_failed}}},
            {"decision_latency_ms",
             {{"p50", json_number(a.decision_p50_ms)},
              {"p95", json_number(a.decision_p95_ms)},
              {"max", json_number(a.decision_max_ms)},
              {"decode_mean", json_number(a.decode_mean_ms)}}},
            {"turns",
             {{"speak", a.n_speak_turns},
              {"audio", a.n_audio_turns},
              {"matched", a.pairs.size()},
              {"unmatched_speak", a.unmatched_speak},
              {"unmatched_audio", a.unmatched_audio}}},
            {"tts_status", to_string(a.tts_status)},
            {"tts_reason", a.tts_reason},
            {"pairs", pairs},
            {"first_audio_ms",
             {{"e2e_p50", json_number(a.first_audio_e2e_p50_ms)},
              {"e2e_p95", json_number(a.first_audio_e2e_p95_ms)},
              {"tts_p50", json_number(a.first_audio_tts_p50_ms)},
              {"tts_p95", json_number(a.first_audio_tts_p95_ms)}}},
            {"rtf", {{"tts_mean", json_number(a.tts_rtf_mean)}, {"tts_max", json_number(a.tts_rtf_max)}, {"e2e_mean", json_number(a.e2e_rtf_mean)}}},
            {"chunks",
             {{"n", a.n_chunks},
              {"total_s", a.audio_total_s},
              {"min_s", json_number(a.chunk_min_s)},
              {"p50_s", json_number(a.chunk_p50_s)},
              {"max_s", json_number(a.chunk_max_s)},
              {"final_s", a.final_chunk_s}}},
            {"checks", checks},
            {"verdict", to_string(a.verdict)},
            {"summary", a.summary},
            {"exit_code", exit_code(a.verdict)}};
}

}  // namespace rtf::bench
