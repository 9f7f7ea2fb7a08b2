// rtf quality: check one output by hand with the same gates bench runs on every run —
// audio sanity, speech-likeness, chunk boundaries, token-stream loops / EOS, equivalence
// against a baseline, and intelligibility (pocketsphinx WER against a reference text,
// with the red line: candidate WER <= baseline WER + 2 points).
// Exit: 0 every check passed (skipped ones do not fail), 2 a gate failed, 1 usage/setup.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/parse.h"
#include "quality/asr.h"
#include "quality/audio-checks.h"
#include "quality/audio-file.h"
#include "quality/equivalence.h"
#include "quality/quality-config.h"
#include "quality/token-checks.h"

namespace rtf::cli {

namespace {

// Declarations, not `using namespace`: the CLI is a unity build (CMakeLists.txt), where a
// directive here would reach the next command's file (quality::fmt vs rtf::fmt).
using quality::Asr;
using quality::AsrConfig;
using quality::AsrResult;
using quality::MonoAudio;
using quality::QualityConfig;
using quality::QualityReport;
using quality::asr_available;
using quality::asr_wer;
using quality::check_audio;
using quality::check_tokens;
using quality::compare_audio;
using quality::compare_tokens;
using quality::default_asr_model_dir;
using quality::load_mono_audio;
using quality::make_skipped;
using quality::normalise_text;
using quality::periodic_boundaries;
using quality::read_token_file;
using quality::wer_red_line;

struct QualityOptions {
    std::string file;
    std::string text;
    std::string baseline;
    std::string json;
    std::vector<std::string> thresholds;  // "k=v,k=v", repeatable
    double max_wer = -1;                  // <0: the config default
    double max_wer_increase = -1;
    double chunk_ms = 0;
    bool no_speech = false;
    std::string asr_model;
    std::string tokens;
    std::string baseline_tokens;
    int64_t vocab = 0;
    int64_t eos = -1;
    int64_t limit = 0;
};

void print_section(std::ostream &out, const std::string &title, const QualityReport &r) {
    if (!title.empty()) out << title << "\n";
    std::string text = r.to_text();
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        out << "  " << text.substr(pos, nl - pos) << "\n";
        pos = nl == std::string::npos ? text.size() : nl + 1;
    }
}

std::string describe(const MonoAudio &a) {
    return a.path + " (" + std::to_string(a.sample_rate) + " Hz, " + std::to_string(a.channels) + " ch, " +
           quality::fmt(a.duration_s(), 4) + " s, " + a.format + ")";
}

int run_quality(const QualityOptions &o) {
    if (o.file.empty() && o.tokens.empty()) {
        throw_usage("rtf quality needs an audio FILE and/or --tokens FILE (see rtf quality --help)");
    }
    if (!o.baseline.empty() && o.file.empty()) throw_usage("--baseline needs the candidate audio FILE");
    if (!o.text.empty() && o.file.empty()) throw_usage("--text needs the audio FILE to transcribe");
    if (!o.tokens.empty() && o.vocab <= 0) throw_usage("--tokens needs --vocab N (the vocabulary size, > 0)");
    if (!o.baseline_tokens.empty() && o.tokens.empty()) throw_usage("--baseline-tokens needs --tokens FILE");

    QualityConfig cfg;
    for (const auto &t : o.thresholds)
        for (const auto &[k, v] : parse_key_values(t, "--threshold")) cfg.set(k, v);
    if (o.max_wer >= 0) cfg.max_wer_pct = o.max_wer;
    if (o.max_wer_increase >= 0) cfg.max_wer_increase_pp = o.max_wer_increase;
    if (o.no_speech) cfg.expect_speech = false;
    cfg.validate();

    AsrConfig asr_cfg;
    asr_cfg.model_dir = o.asr_model;
    std::unique_ptr<Asr> asr;
    if (!o.text.empty()) {
        if (normalise_text(o.text).empty()) throw_usage("--text '" + o.text + "' has no words to score against");
        if (asr_available()) asr = std::make_unique<Asr>(asr_cfg);  // Setup error names the model path
    }

    // With --json - the JSON owns stdout; the human-readable lines go to stderr.
    std::ostream &out = o.json == "-" ? std::cerr : std::cout;
    nlohmann::json j = {{"schema", "rtf.quality/1"}, {"config", cfg.to_json()}};
    QualityReport all;
    MonoAudio audio;
    if (!o.file.empty()) {
        audio = load_mono_audio(o.file);
        out << "audio: " << describe(audio) << "\n";
        const auto bounds = periodic_boundaries(audio.samples.size(), audio.sample_rate, o.chunk_ms);
        QualityReport ar = check_audio(audio.samples, audio.sample_rate, bounds, cfg);
        print_section(out, "audio checks:", ar);
        all.append(ar);
        j["input"] = audio.to_json();
        j["audio"] = ar.to_json();

        AsrResult cand_asr;
        if (!o.text.empty()) {
            cand_asr = asr_wer(asr.get(), audio.samples, audio.sample_rate, o.text, cfg);
            QualityReport ir;
            ir.checks.push_back(cand_asr.check);
            out << "intelligibility (" << (asr ? "pocketsphinx, " + asr->model_dir() : "no ASR") << "):\n";
            if (cand_asr.ran) out << "  heard: \"" << cand_asr.transcript << "\"\n";
            print_section(out, "", ir);
            all.append(ir);
            j["asr"] = asr_cfg.to_json();
            j["intelligibility"] = cand_asr.to_json();
        }

        if (!o.baseline.empty()) {
            MonoAudio base = load_mono_audio(o.baseline);
            out << "baseline: " << describe(base) << "\n";
            QualityReport er = compare_audio(audio.samples, audio.sample_rate, base.samples, base.sample_rate, cfg);
            nlohmann::json bj = {{"input", base.to_json()}};
            if (!o.text.empty()) {
                AsrResult base_asr = asr_wer(asr.get(), base.samples, base.sample_rate, o.text, cfg);
                if (base_asr.ran && cand_asr.ran) {
                    er.checks.push_back(wer_red_line(cand_asr.wer.wer_pct, base_asr.wer.wer_pct, cfg));
                } else {
                    er.checks.push_back(make_skipped("wer_increase_pp", "pp", "<=", cfg.max_wer_increase_pp,
                                                     "skipped (no ASR)"));
                }
                if (base_asr.ran) out << "  baseline heard: \"" << base_asr.transcript << "\"\n";
                bj["intelligibility"] = base_asr.to_json();
            }
            print_section(out, "equivalence with the baseline:", er);
            all.append(er);
            bj["equivalence"] = er.to_json();
            j["baseline"] = bj;
        }
    }

    if (!o.tokens.empty()) {
        const auto ids = read_token_file(o.tokens);
        out << "tokens: " << o.tokens << " (" << ids.size() << " ids, vocab " << o.vocab << ", eos "
                  << (o.eos >= 0 ? std::to_string(o.eos) : std::string("none")) << ", limit "
                  << (o.limit > 0 ? std::to_string(o.limit) : std::string("none")) << ")\n";
        QualityReport tr = check_tokens(ids, o.vocab, o.eos, o.limit, cfg);
        if (!o.baseline_tokens.empty()) tr.checks.push_back(compare_tokens(ids, read_token_file(o.baseline_tokens)));
        print_section(out, "token checks:", tr);
        all.append(tr);
        j["tokens"] = tr.to_json();
    }

    j["passed"] = all.passed();
    j["n_failed"] = all.n_failed();
    j["n_skipped"] = all.n_skipped();
    std::string verdict = all.passed() ? "PASS" : "FAIL";
    out << "verdict: " << verdict << " (" << all.checks.size() << " checks, " << all.n_failed()
              << " failed, " << all.n_skipped() << " skipped)";
    if (!all.passed()) {
        out << ":";
        for (const auto *c : all.failures()) out << " " << c->name;
    }
    out << "\n";
    if (!o.json.empty()) write_json(j, o.json);
    return all.passed() ? 0 : 2;
}

}  // namespace

static void add_quality_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "quality", "Check an output by hand with bench's quality gates: audio sanity (NaN, clipping, level, "
                   "silence, noise, loops, chunk boundaries), token loops / EOS, equivalence with a baseline, "
                   "intelligibility (pocketsphinx WER). Exit 0 all passed, 2 a gate failed, 1 usage error");
    auto o = std::make_shared<QualityOptions>();
    sub->add_option("file", o->file, "Audio file to check (WAV or anything libsndfile reads; stereo is mixed down)");
    sub->add_option("--text", o->text, "Reference text: transcribe with pocketsphinx and gate the word error rate");
    sub->add_option("--baseline", o->baseline,
                    "Baseline audio of the same input: gate duration, RMS ratio and log-mel distance, and (with "
                    "--text) the WER red line");
    sub->add_option("--json", o->json, "Also write the full result as JSON to this file ('-' = stdout)");
    std::string keys;
    for (const auto &k : QualityConfig::keys()) keys += (keys.empty() ? "" : ", ") + k;
    sub->add_option("--threshold", o->thresholds,
                    "Override thresholds: key=value[,key=value] (repeatable). Keys (units and defaults in "
                    "src/quality/quality-config.h; `--json -` shows the values used): " + keys);
    sub->add_option("--max-wer", o->max_wer, "Largest word error rate accepted with --text (percent; default 35)")
        ->check(CLI::Range(0.0, 1000.0));
    sub->add_option("--max-wer-increase", o->max_wer_increase,
                    "Red line: largest WER increase over the baseline (percentage points; default 2)")
        ->check(CLI::Range(0.0, 1000.0));
    sub->add_option("--chunk-ms", o->chunk_ms,
                    "Check for discontinuities at chunk boundaries every MS milliseconds (e.g. 1000 for 25-token "
                    "chunks; default 0 = no boundary check)")
        ->check(CLI::Range(0.0, 1e9));
    sub->add_flag("--no-speech", o->no_speech,
                  "The audio is not expected to be speech (twin models emit noise): skip flatness and loop checks");
    sub->add_option("--asr-model", o->asr_model,
                    "pocketsphinx en-us model directory (holding en-us/, en-us.lm.bin, cmudict-en-us.dict; default "
                    "$RTF_ASR_MODEL_DIR, else " + (default_asr_model_dir().empty() ? std::string("none: built without "
                    "pocketsphinx") : default_asr_model_dir()) + ")");
    sub->add_option("--tokens", o->tokens, "Token ids to check (whitespace-separated integers; text or audio tokens)");
    sub->add_option("--baseline-tokens", o->baseline_tokens,
                    "Baseline token ids: the --tokens stream must be identical (greedy / fixed seed)");
    sub->add_option("--vocab", o->vocab, "Vocabulary size for --tokens (ids must lie in [0, N))")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    sub->add_option("--eos", o->eos, "End-of-stream id for --tokens (default: none, the EOS check is skipped)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
    sub->add_option("--limit", o->limit,
                    "Generation limit the run used, in tokens: EOS must come before it (default 0 = none)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
    sub->callback([&action, o] { action = [o] { return run_quality(*o); }; });
}

RTF_COMMAND(70, add_quality_command);

}  // namespace rtf::cli
