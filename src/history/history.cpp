#include "history/history.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/robust-stats.h"
#include "rtf/build-info.h"
#include "core/error.h"
#include "machine/provenance.h"

namespace rtf::history {

namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const void *data, size_t n, uint64_t h = 1469598103934665603ULL) {
    const auto *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

std::string hex16(uint64_t h) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
    return b;
}

// A prepared statement that finalises itself.
class Stmt {
public:
    Stmt(sqlite3 *db, const std::string &sql, const std::string &path) : db_(db), path_(path) {
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) fail("prepare");
    }
    ~Stmt() { sqlite3_finalize(s_); }
    Stmt(const Stmt &) = delete;
    Stmt &operator=(const Stmt &) = delete;
    void bind(int i, const std::string &v) { sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
    void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
    bool step() {
        const int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        fail("step");
    }
    std::string text(int c) const {
        const auto *t = sqlite3_column_text(s_, c);
        return t ? reinterpret_cast<const char *>(t) : "";
    }
    int64_t integer(int c) const { return sqlite3_column_int64(s_, c); }

private:
    [[noreturn]] void fail(const char *what) const {
        throw_setup("history " + path_ + ": " + what + " failed: " + sqlite3_errmsg(db_));
    }
    sqlite3 *db_;
    sqlite3_stmt *s_ = nullptr;
    std::string path_;
};

nlohmann::json parse_or(const std::string &s, nlohmann::json dflt) {
    if (s.empty()) return dflt;
    auto j = nlohmann::json::parse(s, nullptr, false);
    return j.is_discarded() ? dflt : j;
}

const char *kColumns =
    "id, created, kind, label, workload, rtfkit, llama_cpp, machine_id, kit_id, machine, kit, knobs, metrics, runs";

Entry row_to_entry(const Stmt &s) {
    Entry e;
    e.id = s.integer(0);
    e.created = s.text(1);
    e.kind = s.text(2);
    e.label = s.text(3);
    e.workload = s.text(4);
    e.rtfkit = s.text(5);
    e.llama_cpp = s.text(6);
    e.machine_id = s.text(7);
    e.kit_id = s.text(8);
    e.machine = parse_or(s.text(9), nlohmann::json::object());
    e.kit = parse_or(s.text(10), nullptr);
    e.knobs = parse_or(s.text(11), nlohmann::json::object());
    e.metrics = parse_or(s.text(12), nlohmann::json::object());
    e.runs = parse_or(s.text(13), nlohmann::json::object());
    return e;
}

std::string knob_text(const nlohmann::json &v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

// ---- the store ---------------------------------------------------------------------------

History::History(const std::string &path) : path_(path) {
    if (path.empty()) throw_usage("--history-db: the history file path is empty");
    std::error_code ec;
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
        const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw_setup("history " + path + ": cannot open: " + msg);
    }
    sqlite3_busy_timeout(db_, 5000);  // two rtf processes appending at once wait, not fail
    const char *schema =
        "CREATE TABLE IF NOT EXISTS results ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, kind TEXT NOT NULL, label TEXT, workload TEXT,"
        " rtfkit TEXT, llama_cpp TEXT, machine_id TEXT NOT NULL, kit_id TEXT, machine TEXT, kit TEXT, knobs TEXT,"
        " metrics TEXT NOT NULL, runs TEXT, result TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS results_where ON results(machine_id, kit_id, kind);";
    char *err = nullptr;
    if (sqlite3_exec(db_, schema, nullptr, nullptr, &err) != SQLITE_OK) {
        const std::string msg = err ? err : "unknown error";
        sqlite3_free(err);
        sqlite3_close(db_);
        db_ = nullptr;
        throw_setup("history " + path + ": not a usable history database: " + msg);
    }
}

History::~History() {
    if (db_) sqlite3_close(db_);
}

std::string History::default_path() {
    if (const char *e = std::getenv("RTF_HISTORY_DB"); e && *e) return e;
    if (const char *x = std::getenv("XDG_DATA_HOME"); x && *x) return (fs::path(x) / "rtfkit" / "history.db").string();
    const char *home = std::getenv("HOME");
    return (fs::path(home && *home ? home : ".") / ".local" / "share" / "rtfkit" / "history.db").string();
}

int64_t History::append(const Entry &e, const nlohmann::json &result) {
    Stmt s(db_,
           "INSERT INTO results (created, kind, label, workload, rtfkit, llama_cpp, machine_id, kit_id, machine, kit, knobs,"
           " metrics, runs, result) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
           path_);
    s.bind(1, e.created);
    s.bind(2, e.kind);
    s.bind(3, e.label);
    s.bind(4, e.workload);
    s.bind(5, e.rtfkit);
    s.bind(6, e.llama_cpp);
    s.bind(7, e.machine_id);
    s.bind(8, e.kit_id);
    s.bind(9, e.machine.dump());
    s.bind(10, e.kit.dump());
    s.bind(11, e.knobs.dump());
    s.bind(12, e.metrics.dump());
    s.bind(13, e.runs.dump());
    s.bind(14, result.dump());
    s.step();
    return sqlite3_last_insert_rowid(db_);
}

std::vector<Entry> History::list(const Filter &f) const {
    std::string sql = std::string("SELECT ") + kColumns + " FROM results WHERE 1";
    std::vector<std::string> args;
    auto eq = [&](const char *col, const std::string &v) {
        if (v.empty()) return;
        sql += std::string(" AND ") + col + " = ?";
        args.push_back(v);
    };
    eq("kind", f.kind);
    eq("machine_id", f.machine_id);
    eq("kit_id", f.kit_id);
    eq("label", f.label);
    eq("workload", f.workload);
    sql += " ORDER BY id";
    Stmt s(db_, sql, path_);
    for (size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i + 1), args[i]);
    std::vector<Entry> out;
    std::string knob_name, knob_value;
    if (!f.knob.empty()) {
        const auto eqp = f.knob.find('=');
        if (eqp == std::string::npos) throw_usage("--knob: '" + f.knob + "' is not NAME=VALUE");
        knob_name = f.knob.substr(0, eqp);
        knob_value = f.knob.substr(eqp + 1);
    }
    while (s.step()) {
        Entry e = row_to_entry(s);
        if (!f.metric.empty() && !e.metrics.contains(f.metric)) continue;
        if (!knob_name.empty() && (!e.knobs.contains(knob_name) || knob_text(e.knobs[knob_name]) != knob_value)) continue;
        out.push_back(std::move(e));
    }
    if (f.limit > 0 && static_cast<int64_t>(out.size()) > f.limit) out.erase(out.begin(), out.end() - f.limit);
    return out;
}

std::optional<Entry> History::get(int64_t id) const {
    Stmt s(db_, std::string("SELECT ") + kColumns + " FROM results WHERE id = ?", path_);
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return row_to_entry(s);
}

nlohmann::json History::result(int64_t id) const {
    Stmt s(db_, "SELECT result FROM results WHERE id = ?", path_);
    s.bind(1, id);
    if (!s.step()) return nullptr;
    return parse_or(s.text(0), nullptr);
}

// ---- identities --------------------------------------------------------------------------

std::string machine_id(const nlohmann::json &m) {
    // What decides speed, not what varies run to run (free memory, hostname, kernel).
    nlohmann::json key = nlohmann::json::object();
    if (m.contains("cpu")) {
        for (const char *k : {"cpu_model", "cores", "pus", "packages"})
            if (m["cpu"].contains(k)) key[k] = m["cpu"][k];
    }
    if (m.contains("memory_bytes")) key["memory_bytes"] = m["memory_bytes"];
    if (m.contains("arch")) key["arch"] = m["arch"];
    nlohmann::json devs = nlohmann::json::array();
    if (m.contains("backend") && m["backend"].contains("devices")) {
        for (const auto &d : m["backend"]["devices"]) {
            devs.push_back({{"name", d.value("name", "")}, {"description", d.value("description", "")},
                            {"memory_total_bytes", d.value("memory_total_bytes", 0.0)}});
        }
    }
    key["devices"] = devs;
    const std::string s = key.dump();
    return hex16(fnv1a(s.data(), s.size()));
}

nlohmann::json kit_identity(const std::string &dir) {
    if (dir.empty()) return nullptr;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return nullptr;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory() && it->path().filename() == ".rtf-cache") {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file() && it->path().extension() == ".gguf") files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    nlohmann::json arr = nlohmann::json::array();
    std::vector<char> buf(64 * 1024);
    for (const auto &p : files) {
        std::ifstream in(p, std::ios::binary);
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto n = static_cast<size_t>(in.gcount());
        arr.push_back({{"name", fs::relative(p, dir, ec).string()},
                       {"bytes", static_cast<int64_t>(fs::file_size(p, ec))},
                       {"head_hash", hex16(fnv1a(buf.data(), n))}});
    }
    return {{"dir", fs::absolute(dir, ec).string()}, {"files", arr}};
}

std::string kit_id(const nlohmann::json &identity) {
    if (!identity.is_object() || !identity.contains("files")) return "";
    const std::string s = identity["files"].dump();  // the files, not where the kit sits
    return hex16(fnv1a(s.data(), s.size()));
}

std::string rtfkit_version() {
    std::string v = RTF_VERSION;
    // The source tree's commit, if it is a git checkout and git is installed.
    const std::string src = RTF_SOURCE_DIR;
    if (src.find('\'') != std::string::npos) return v;
    const std::string cmd = "git -C '" + src + "' rev-parse --short=12 HEAD 2>/dev/null && git -C '" + src +
                            "' diff --quiet HEAD -- 2>/dev/null || echo dirty";
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return v;
    std::array<char, 128> line{};
    std::string commit, dirty;
    if (std::fgets(line.data(), line.size(), p)) commit = line.data();
    if (std::fgets(line.data(), line.size(), p)) dirty = line.data();
    pclose(p);
    auto trim = [](std::string s) {
        while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
        return s;
    };
    commit = trim(commit);
    if (commit.empty() || commit == "dirty") return v;
    return v + " (git " + commit + (trim(dirty) == "dirty" ? "-dirty" : "") + ")";
}

// ---- rows from results -----------------------------------------------------------------

nlohmann::json flatten_numbers(const nlohmann::json &j) {
    nlohmann::json out = nlohmann::json::object();
    std::function<void(const nlohmann::json &, const std::string &)> walk = [&](const nlohmann::json &v, const std::string &p) {
        if (v.is_number()) {
            out[p] = v;
        } else if (v.is_object()) {
            for (auto it = v.begin(); it != v.end(); ++it) walk(it.value(), p.empty() ? it.key() : p + "." + it.key());
        }
    };
    walk(j, "");
    return out;
}

namespace {
Entry common(const std::string &kind, const std::string &kit_dir) {
    Entry e;
    e.created = utc_timestamp();
    e.kind = kind;
    e.rtfkit = rtfkit_version();
    e.llama_cpp = RTF_LLAMA_CPP_VERSION;
    e.machine = machine_json();
    e.machine_id = machine_id(e.machine);
    e.kit = kit_identity(kit_dir);
    e.kit_id = kit_id(e.kit);
    return e;
}
}  // namespace

std::vector<Entry> entries_from_bench(const nlohmann::json &bench, const std::string &kit_dir) {
    std::vector<Entry> out;
    if (!bench.contains("configs")) return out;
    const Entry base = common("bench", kit_dir);
    for (const auto &c : bench["configs"]) {
        Entry e = base;
        e.label = c.value("label", "");
        e.workload = bench.value("workload", "");
        if (c.contains("knobs")) e.knobs = c["knobs"];
        if (c.contains("summary")) {
            for (auto it = c["summary"].begin(); it != c["summary"].end(); ++it) {
                const auto &med = it.value().contains("median") ? it.value()["median"] : nlohmann::json();
                if (med.is_number()) e.metrics[it.key()] = med;
            }
        }
        if (c.contains("values")) {
            for (auto it = c["values"].begin(); it != c["values"].end(); ++it) {
                nlohmann::json v = nlohmann::json::array();
                for (const auto &x : it.value())
                    if (x.is_number()) v.push_back(x);
                if (!v.empty()) e.runs[it.key()] = v;
            }
        }
        out.push_back(std::move(e));
    }
    return out;
}

Entry entry_from_speak(const nlohmann::json &speak, const nlohmann::json &knobs, const std::string &kit_dir) {
    Entry e = common("speak", kit_dir);
    e.workload = "speak";
    e.knobs = knobs;
    if (speak.contains("metrics")) e.metrics = flatten_numbers(speak["metrics"]);
    if (speak.contains("first_audio") && speak["first_audio"].contains("parts")) {
        for (auto it = speak["first_audio"]["parts"].begin(); it != speak["first_audio"]["parts"].end(); ++it)
            if (it.value().is_number()) e.metrics["first_audio." + it.key()] = it.value();
    }
    for (auto it = e.metrics.begin(); it != e.metrics.end(); ++it) e.runs[it.key()] = nlohmann::json::array({it.value()});
    return e;
}

Entry entry_from_tune(const nlohmann::json &tune, const std::string &kit_dir) {
    Entry e = common("tune", kit_dir);
    e.workload = tune.value("workload", "");
    // The configuration the tune leaves: the profile it started from (profile_knobs, when it
    // recorded one) with the kept changes over it — what `--profile auto` then runs. A tune that
    // recorded no profile leaves only its changes: label "tuned" (kTunedChangesLabel), read as
    // changes over the CPU's built-in profile.
    const bool complete = tune.contains("profile_knobs") && tune["profile_knobs"].is_object();
    e.label = complete ? kTunedConfigLabel : kTunedChangesLabel;
    e.knobs = complete ? tune["profile_knobs"] : nlohmann::json::object();
    if (tune.contains("changes") && tune["changes"].is_object())
        for (auto it = tune["changes"].begin(); it != tune["changes"].end(); ++it) e.knobs[it.key()] = it.value();
    // The tuner's own figures: the baseline measured, the kept pairs' ratio product and the
    // estimate it implies (rtf = base x gain: a product of in-pair ratios, not one measured run).
    // A tune for another objective (gapless_start_ms, first_audio_ms) also gives that
    // objective's baseline and estimate, under its own name; "gain" stays the RTF's.
    const bool rtf_gain = tune.contains("rtf_gain") && tune["rtf_gain"].is_number();
    for (const auto &[k, m] : {std::pair{"base_rtf", "rtf_base"}, std::pair{"best_rtf_estimate", "rtf"},
                               std::pair{rtf_gain ? "rtf_gain" : "gain", "gain"}, std::pair{"wall_s", "wall_s"}})
        if (tune.contains(k) && tune[k].is_number()) e.metrics[m] = tune[k];
    const std::string objective = tune.value("objective", "rtf");
    if (objective != "rtf") {
        if (tune.contains("base_value") && tune["base_value"].is_number()) e.metrics[objective + "_base"] = tune["base_value"];
        if (tune.contains("best_value_estimate") && tune["best_value_estimate"].is_number())
            e.metrics[objective] = tune["best_value_estimate"];
        if (tune.contains("gain") && tune["gain"].is_number()) e.metrics["objective_gain"] = tune["gain"];
    }
    if (tune.contains("trials") && tune["trials"].is_array()) e.metrics["trials"] = tune["trials"].size();
    for (auto it = e.metrics.begin(); it != e.metrics.end(); ++it) e.runs[it.key()] = nlohmann::json::array({it.value()});
    return e;
}

std::optional<Entry> latest_tune_for(const History &h, const std::string &kit_dir) {
    if (kit_dir.empty()) return std::nullopt;  // an empty kit id would match every kit
    Filter f;
    f.kind = "tune";
    f.machine_id = machine_id(machine_json());
    f.kit_id = kit_id(kit_identity(kit_dir));
    f.limit = 1;
    auto rows = h.list(f);
    if (rows.empty()) return std::nullopt;
    return rows.back();
}

nlohmann::json metric_series(const std::vector<Entry> &rows, const std::string &metric, const nlohmann::json &filters,
                             const std::string &db) {
    auto pts = nlohmann::json::array();
    for (const auto &e : rows) {
        if (!e.metrics.contains(metric) || !e.metrics[metric].is_number()) continue;
        std::string commit;
        if (auto g = e.rtfkit.find("(git "); g != std::string::npos) {
            commit = e.rtfkit.substr(g + 5);
            if (auto close = commit.find(')'); close != std::string::npos) commit.resize(close);
        }
        pts.push_back({{"id", e.id},
                       {"created", e.created},
                       {"kind", e.kind},
                       {"label", e.label},
                       {"workload", e.workload},
                       {"rtfkit", e.rtfkit},
                       {"commit", commit},
                       {"machine_id", e.machine_id},
                       {"kit_id", e.kit_id},
                       {"value", e.metrics[metric]},
                       {"runs", e.runs.contains(metric) ? e.runs[metric] : nlohmann::json::array()}});
    }
    return {{"schema", "rtfkit.history-series/1"}, {"metric", metric}, {"filters", filters}, {"db", db}, {"points", pts}};
}

// ---- regression check --------------------------------------------------------------------

bool lower_is_better(const std::string &m) {
    auto ends = [&](const std::string &s) { return m.size() >= s.size() && m.compare(m.size() - s.size(), s.size(), s) == 0; };
    return m.rfind("rtf", 0) == 0 || ends("_ms") || m.rfind("starvation", 0) == 0 || m.rfind("first_audio", 0) == 0 ||
           m.rfind("bound_", 0) == 0;
}

Check check_regression(const Entry &baseline, const Entry &candidate, const std::string &metric, double noise) {
    for (const Entry *e : {&baseline, &candidate}) {
        if (!e->metrics.contains(metric) || !e->metrics[metric].is_number()) {
            std::string have;
            for (auto it = e->metrics.begin(); it != e->metrics.end() && have.size() < 300; ++it)
                have += (have.empty() ? "" : ", ") + it.key();
            throw_usage("--metric: result #" + std::to_string(e->id) + " has no metric '" + metric + "'; it has: " + have);
        }
    }
    if (!(noise >= 0)) throw_usage("--noise: must be >= 0");
    Check c;
    c.metric = metric;
    c.noise = noise;
    c.baseline = baseline.metrics[metric].get<double>();
    c.candidate = candidate.metrics[metric].get<double>();
    c.delta = c.candidate - c.baseline;
    const double worse = lower_is_better(metric) ? c.delta : -c.delta;
    bool significant = true;
    auto runs = [&](const Entry &e) {
        std::vector<double> v;
        if (e.runs.contains(metric))
            for (const auto &x : e.runs[metric]) v.push_back(x.get<double>());
        return v;
    };
    const auto a = runs(baseline), b = runs(candidate);
    if (a.size() >= 3 && b.size() >= 3) {
        const auto t = mann_whitney_u(a, b);
        if (t.possible) {
            char buf[128];
            std::snprintf(buf, sizeof buf, "p=%.3g (Mann-Whitney U, %zu vs %zu runs)", t.p_value, a.size(), b.size());
            c.significance = buf;
            significant = t.significant;
        } else {  // e.g. 3 vs 3: no arrangement reaches p < 0.05
            c.significance = t.note + "; the noise floor alone decides";
        }
    } else {
        c.significance = "no test (" + std::to_string(a.size()) + " vs " + std::to_string(b.size()) +
                         " runs; 3 each needed): the noise floor alone decides";
    }
    c.regression = worse > noise && significant;
    c.improvement = -worse > noise && significant;
    char line[256];
    std::snprintf(line, sizeof line, "%s: #%lld %.4g -> #%lld %.4g (delta %+.4g, noise %.4g): %s", metric.c_str(),
                  static_cast<long long>(baseline.id), c.baseline, static_cast<long long>(candidate.id), c.candidate, c.delta,
                  noise,
                  c.regression    ? "REGRESSION"
                  : c.improvement ? "improvement"
                  : worse > noise ? "worse, but not significant"
                                  : "within noise");
    c.verdict = line;
    return c;
}

}  // namespace rtf::history
