#pragma once
// The result history: every `rtf bench` / `rtf speak` / `rtf demo` / `rtf tune` result, kept in one
// SQLite file with what it takes to compare it later with a like result (docs/method.md §7.4:
// record every result, reproducibly).
//
//   History h(History::default_path());           // creates the file and schema if needed
//   for (auto &e : entries_from_bench(doc)) h.append(e, doc);
//   auto rows = h.list({.kind = "bench", .metric = "rtf"});
//   auto c = check_regression(*h.get(base_id), rows.back(), "rtf", 0.03);   // c.regression
//
// One row per measured configuration: a bench sweep or A/B gives one row per config.
// A row holds: when, the kind and label, the rtfkit commit (git of the source tree, when
// there is one) and the llama.cpp release, a machine fingerprint (CPU model, cores, PUs,
// memory, ggml devices: machines with equal fingerprints compare), the kit's identity
// (each model file's name, size and a hash of its first 64 KiB — the GGUF header and
// tensor table — so a changed file is a different kit), every knob, the metrics (the
// median per metric for bench, the value for a single run), every run's values (for the
// significance test), and the whole result JSON.
//
// Where: --history-db FILE (every command; rtf history also takes the older --db), else
// $RTF_HISTORY_DB, else $XDG_DATA_HOME/rtfkit/history.db, else ~/.local/share/rtfkit/history.db.
// Errors: an unreadable/corrupt file or a failing statement -> rtf::Error(Setup) naming
// the file and SQLite's message. Thread-safety: one History per thread.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;

namespace rtf::history {

struct Entry {
    int64_t id = 0;
    std::string created;     // UTC ISO 8601
    std::string kind;        // "bench" | "speak" | "tune"
    std::string label;       // bench config label, or ""
    std::string workload;    // bench workload ("speak" for speak runs)
    std::string rtfkit;      // version + git commit of the source tree when known
    std::string llama_cpp;   // the pinned llama.cpp release/commit
    std::string machine_id;  // fingerprint hash (16 hex)
    std::string kit_id;      // kit identity hash (16 hex), "" when no kit
    nlohmann::json machine = nlohmann::json::object();
    nlohmann::json kit = nullptr;
    nlohmann::json knobs = nlohmann::json::object();
    nlohmann::json metrics = nlohmann::json::object();  // flat name -> number (median)
    nlohmann::json runs = nlohmann::json::object();     // flat name -> [per-run numbers]
};

struct Filter {
    std::string kind, machine_id, kit_id, label, workload;
    std::string knob;         // "NAME=VALUE": rows whose knob NAME has this value
    std::string metric;       // rows that have this metric
    int64_t limit = 0;        // newest N (0 = all)
};

class History {
public:
    explicit History(const std::string &path);
    ~History();
    History(const History &) = delete;
    History &operator=(const History &) = delete;

    static std::string default_path();
    const std::string &path() const { return path_; }

    // Appends `e` (its id is ignored) with the whole `result`; returns the new id.
    int64_t append(const Entry &e, const nlohmann::json &result);
    // Oldest first (the newest N when f.limit > 0).
    std::vector<Entry> list(const Filter &f = {}) const;
    std::optional<Entry> get(int64_t id) const;
    nlohmann::json result(int64_t id) const;  // null when absent

private:
    std::string path_;
    sqlite3 *db_ = nullptr;
};

// Machine fingerprint of a provenance machine JSON (machine/provenance.h machine_json()).
std::string machine_id(const nlohmann::json &machine);
// {"dir", "files": [{"name", "bytes", "head_hash"}...]} of every .gguf under `dir`
// (recursive, rtfkit's own .rtf-cache excluded), and its hash; null/"" when `dir` is "".
nlohmann::json kit_identity(const std::string &dir);
std::string kit_id(const nlohmann::json &identity);
// "0.1.0 (git 1a2b3c4d5e6f[-dirty])" when the source tree is a git checkout, else the version.
std::string rtfkit_version();

// Rows of a bench result (schema rtfkit.bench/1): one per config. `kit_dir` = the speak
// workload's kit, "" for others.
std::vector<Entry> entries_from_bench(const nlohmann::json &bench, const std::string &kit_dir);
// The row of a speak/demo result (speak::to_json): its metrics as single-run values.
Entry entry_from_speak(const nlohmann::json &speak, const nlohmann::json &knobs, const std::string &kit_dir);

// The row of an `rtf tune` result (schema rtfkit.tune/1): kind "tune"; its knobs the
// configuration the tune leaves (the profile it started from, profile_knobs, with the kept
// changes over it; label kTunedConfigLabel), or only the kept changes when the result recorded
// no profile (label kTunedChangesLabel: what every tune row held before session 24); metrics
// rtf (the tuner's estimate: baseline x the kept pairs' ratios), rtf_base, gain, trials, wall_s.
inline constexpr const char *kTunedConfigLabel = "tuned-config";
inline constexpr const char *kTunedChangesLabel = "tuned";
Entry entry_from_tune(const nlohmann::json &tune, const std::string &kit_dir);

// The newest `rtf tune` row of this machine (its fingerprint now) for the kit in `kit_dir`
// (its identity now), or none: what `--profile auto` starts from (speak/machine-profile.h).
// A row of another machine or another kit (a changed file is another kit) never matches.
std::optional<Entry> latest_tune_for(const History &h, const std::string &kit_dir);

// One metric over `rows` (oldest first) as a result `rtf report` renders (schema
// rtfkit.history-series/1): {"metric", "filters", "db", "points": [{"id", "created", "kind",
// "label", "workload", "rtfkit", "commit" (the git hash in rtfkit, or ""), "machine_id",
// "kit_id", "value", "runs"}]}; rows without the metric are left out.
nlohmann::json metric_series(const std::vector<Entry> &rows, const std::string &metric, const nlohmann::json &filters,
                             const std::string &db);

// Flattens {"a": 1, "b": {"c": 2}} to {"a": 1, "b.c": 2} (numbers only).
nlohmann::json flatten_numbers(const nlohmann::json &j);

// Lower is better for rtf*, *_ms, starvation*; higher for the rest (xrt, efficiency...).
bool lower_is_better(const std::string &metric);

struct Check {
    std::string metric;
    double baseline = 0, candidate = 0, delta = 0, noise = 0;
    bool regression = false;     // worse by more than the noise (and significant when tested)
    bool improvement = false;    // better by more than the noise
    std::string significance;    // "p=0.05 (Mann-Whitney U, 3 vs 3 runs)" or why none was run
    std::string verdict;         // one line
};
// Candidate vs baseline on `metric`; throws rtf::Error(Usage) when either lacks it.
Check check_regression(const Entry &baseline, const Entry &candidate, const std::string &metric, double noise);

}  // namespace rtf::history
