#include "models/lm/weight-fidelity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <llama.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/lm/code-sampler.h"
#include "models/lm/llama-runtime.h"
#include "models/lm/llm-engine.h"
#include "models/lm/tts-engine.h"

namespace rtf::lm {

nlohmann::json WeightFidelity::to_json() const {
    auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    return {{"stage", stage},
            {"weight_type", weight_type},
            {"priced", priced.empty() ? "weight-type " + weight_type : priced},
            {"reference", reference},
            {"reference_file", reference_file},
            {"type_file", type_file},
            {"temperature", temperature},
            {"positions", positions},
            {"kl_mean", kl_mean},
            {"kl_p99", kl_p99},
            {"kl_max", kl_max},
            {"top1_pct", top1_pct},
            {"hidden_snr_db", num(hidden_snr_db)},  // null = identical rows
            {"lines", {{"max_mean_kl", kMaxMeanKl}, {"min_top1_pct", kMinTop1Pct}}},
            {"passes", passes()}};
}

std::vector<double> softmax_at(const float *logits, size_t n, double temperature) {
    std::vector<double> p(n);
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t r = 0; r < n; ++r) mx = std::max(mx, static_cast<double>(logits[r]) / temperature);
    for (size_t r = 0; r < n; ++r) sum += p[r] = std::exp(static_cast<double>(logits[r]) / temperature - mx);
    for (auto &x : p) x /= sum;
    return p;
}

void FidelityAccumulator::add(const std::vector<double> &pr, const std::vector<double> &pq) {
    if (pr.size() != pq.size() || pr.empty())
        throw_usage("fidelity: distributions of different sizes (" + std::to_string(pr.size()) + " vs " +
                    std::to_string(pq.size()) + ")");
    double kl = 0;
    for (size_t r = 0; r < pr.size(); ++r)
        if (pr[r] > 0) kl += pr[r] * (std::log(pr[r]) - std::log(std::max(pq[r], 1e-300)));
    kls_.push_back(std::max(0.0, kl));  // rounding can make an identical pair -1e-17
    top1_ += std::max_element(pr.begin(), pr.end()) - pr.begin() == std::max_element(pq.begin(), pq.end()) - pq.begin();
}

void FidelityAccumulator::add_hidden(const float *ref, const float *type, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(ref[i]) - static_cast<double>(type[i]);
        sig_ += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
        err_ += d * d;
    }
}

WeightFidelity FidelityAccumulator::result() const {
    if (kls_.empty()) throw_usage("fidelity: no position was compared");
    WeightFidelity f;
    f.positions = static_cast<int>(kls_.size());
    double mean = 0;
    for (double x : kls_) mean += x;
    f.kl_mean = mean / static_cast<double>(kls_.size());
    auto s = kls_;
    std::sort(s.begin(), s.end());
    f.kl_p99 = s[std::min(s.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(s.size())))];
    f.kl_max = s.back();
    f.top1_pct = 100.0 * static_cast<double>(top1_) / static_cast<double>(kls_.size());
    f.hidden_snr_db = err_ > 0 ? 10.0 * std::log10(sig_ / err_) : std::numeric_limits<double>::infinity();
    return f;
}

const std::string &default_fidelity_text() {
    // Ordinary English prose (ours), long enough for ~150 tokens: the positions compared.
    static const std::string t =
        "The lighthouse stood at the end of a narrow spit of rock, and every evening the keeper climbed its ninety "
        "steps to light the lamp. Ships passing in the night would see the beam sweep across the water, once every "
        "twelve seconds, and know where the reef began. In winter the storms came from the north and the spray "
        "reached the lantern room; in summer the sea lay flat and silver, and tourists walked out at low tide to "
        "look at the pools among the rocks. The keeper wrote the weather in a book each morning: the wind, the "
        "height of the swell, the ships that had passed, and sometimes a line about the birds that nested under "
        "the gallery. When the light was automated, the book was sent to a museum in the town, where it lies open "
        "under glass at a page from the great storm of that year.";
    return t;
}

void LlmFidelityConfig::validate() const {
    if (model_path.empty()) throw_usage("lm-fidelity: the LLM model path is empty");
    if (placement.weight_type == "file")
        throw_setting("weight-type", "must name a type to price against the file's own (file is the reference)");
    if (max_tokens < 2) throw_setting("n", "positions must be >= 2, got " + std::to_string(max_tokens));
    if (!(temperature > 0)) throw_setting("temperature", "must be > 0");
}

namespace {

// One side of the LLM comparison: the whole text decoded once with every output on; the
// logits and final-norm rows of all positions copied out.
struct LlmPass {
    std::string file;
    int n_vocab = 0, n_embd = 0;
    std::vector<float> logits, hidden;  // [n][n_vocab], [n][n_embd]
};

LlmPass llm_pass(const std::string &path, ModelPlacement pl, const std::vector<int32_t> &toks) {
    LlmPass out;
    out.file = ensure_weight_type(path, pl.weight_type, "llm");
    pl.n_ctx = std::max<uint32_t>(pl.n_ctx, static_cast<uint32_t>(toks.size() + 8));
    LlamaInstance inst = load_llama(path, pl, /*embeddings=*/true, "llm");
    const llama_vocab *vocab = llama_model_get_vocab(inst.model.get());
    out.n_vocab = llama_vocab_n_tokens(vocab);
    out.n_embd = llama_model_n_embd(inst.model.get());
    const int n = static_cast<int>(toks.size());
    out.logits.resize(static_cast<size_t>(n) * static_cast<size_t>(out.n_vocab));
    out.hidden.resize(static_cast<size_t>(n) * static_cast<size_t>(out.n_embd));
    const int nb = static_cast<int>(std::max<uint32_t>(1, pl.n_batch));
    llama_batch b = llama_batch_init(nb, 0, 1);
    for (int s = 0; s < n; s += nb) {
        const int m = std::min(nb, n - s);
        b.n_tokens = m;
        for (int i = 0; i < m; ++i) {
            b.token[i] = toks[static_cast<size_t>(s + i)];
            b.pos[i] = s + i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = 1;
        }
        const int rc = locked_decode(inst, b);
        if (rc != 0) {
            llama_batch_free(b);
            throw_runtime("lm-fidelity: llama_decode failed on " + out.file + " (code " + std::to_string(rc) +
                          "): " + take_llama_log());
        }
        for (int i = 0; i < m; ++i) {
            const float *lg = llama_get_logits_ith(inst.ctx.get(), i);
            const float *h = llama_get_embeddings_ith(inst.ctx.get(), i);
            if (!lg || !h) {
                llama_batch_free(b);
                throw_runtime("lm-fidelity: libllama returned no logits or hidden row for " + out.file + ": " +
                              take_llama_log());
            }
            std::copy(lg, lg + out.n_vocab, out.logits.begin() + static_cast<ptrdiff_t>(s + i) * out.n_vocab);
            std::copy(h, h + out.n_embd, out.hidden.begin() + static_cast<ptrdiff_t>(s + i) * out.n_embd);
        }
    }
    llama_batch_free(b);
    return out;
}


// Positions ref_at + i of `ref` against typ_at + i of `typ`, i < n: the sampler's
// distributions and the hidden rows; stage "llm", files and temperature filled in.
WeightFidelity compare_llm_passes(const LlmPass &ref, size_t ref_at, const LlmPass &typ, size_t typ_at, size_t n,
                                  double temperature) {
    if (ref.n_vocab != typ.n_vocab || ref.n_embd != typ.n_embd)
        throw_runtime("lm-fidelity: " + typ.file + " has another vocabulary or width than " + ref.file);
    FidelityAccumulator acc;
    const size_t V = static_cast<size_t>(ref.n_vocab), E = static_cast<size_t>(ref.n_embd);
    for (size_t i = 0; i < n; ++i) {
        const size_t a = ref_at + i, b = typ_at + i;
        acc.add(softmax_at(ref.logits.data() + a * V, V, temperature), softmax_at(typ.logits.data() + b * V, V, temperature));
        acc.add_hidden(ref.hidden.data() + a * E, typ.hidden.data() + b * E, E);
    }
    WeightFidelity f = acc.result();
    f.stage = "llm";
    f.reference_file = ref.file;
    f.type_file = typ.file;
    f.temperature = temperature;
    return f;
}

}  // namespace

WeightFidelity llm_weight_fidelity(const LlmFidelityConfig &cfg) {
    cfg.validate();
    const std::string &text = cfg.text.empty() ? default_fidelity_text() : cfg.text;
    std::vector<int32_t> toks;
    {
        // Tokenise with the reference file's vocabulary (a conversion keeps it).
        ModelPlacement pl = cfg.placement;
        pl.weight_type = "file";
        ensure_llama_backend();
        llama_model_params mp = llama_model_default_params();
        mp.vocab_only = true;
        LlamaModelPtr m(llama_model_load_from_file(cfg.model_path.c_str(), mp));
        if (!m) throw_setup("lm-fidelity: libllama could not load " + cfg.model_path + ": " + take_llama_log());
        const llama_vocab *v = llama_model_get_vocab(m.get());
        toks.resize(text.size() + 8);
        int n = llama_tokenize(v, text.data(), static_cast<int32_t>(text.size()), toks.data(),
                               static_cast<int32_t>(toks.size()), /*add_special=*/true, /*parse_special=*/false);
        if (n < 0) throw_runtime("lm-fidelity: the text did not tokenise");
        toks.resize(static_cast<size_t>(std::min(n, cfg.max_tokens)));
        if (toks.size() < 2) throw_usage("lm-fidelity: the text has fewer than 2 tokens");
    }
    ModelPlacement ref_pl = cfg.placement;
    ref_pl.weight_type = "file";
    const LlmPass ref = llm_pass(cfg.model_path, ref_pl, toks);
    const LlmPass typ = llm_pass(cfg.model_path, cfg.placement, toks);
    WeightFidelity f = compare_llm_passes(ref, 0, typ, 0, toks.size(), cfg.temperature);
    f.weight_type = cfg.placement.weight_type;
    return f;
}

void LlmTurnFidelityConfig::validate() const {
    if (model_path.empty()) throw_usage("lm-fidelity: the LLM model path is empty");
    if (turn != "fixed")
        throw_setting("text-turn", "'" + turn + "': the turn priced against echo (the reference) is fixed");
    if (max_tokens < 2) throw_setting("n", "positions must be >= 2, got " + std::to_string(max_tokens));
    if (!(temperature > 0)) throw_setting("temperature", "must be > 0");
}

WeightFidelity llm_text_turn_fidelity(const LlmTurnFidelityConfig &cfg) {
    cfg.validate();
    const std::string &text = cfg.text.empty() ? default_fidelity_text() : cfg.text;
    check_text(text, "the text");
    // The token sequences start_text() decodes under each turn (the engine's own template).
    std::vector<int32_t> ref_toks, typ_toks;
    size_t ref_at = 0, typ_at = 0;
    {
        LlmConfig lc;
        lc.model_path = cfg.model_path;
        lc.placement = cfg.placement;
        LlmEngine e(lc);
        ref_toks = e.text_mode_tokens(text, "echo", &ref_at);
        typ_toks = e.text_mode_tokens(text, cfg.turn, &typ_at);
    }
    const size_t n_reply = ref_toks.size() - ref_at;
    if (n_reply != typ_toks.size() - typ_at || n_reply < 2)
        throw_runtime("lm-fidelity: the reply's tokens differ between the two turns (or fewer than 2)");
    const size_t n = std::min(n_reply, static_cast<size_t>(cfg.max_tokens));
    ref_toks.resize(ref_at + n);
    typ_toks.resize(typ_at + n);
    for (size_t i = 0; i < n; ++i)
        if (ref_toks[ref_at + i] != typ_toks[typ_at + i]) throw_runtime("lm-fidelity: reply tokens misaligned");
    const LlmPass ref = llm_pass(cfg.model_path, cfg.placement, ref_toks);
    const LlmPass typ = llm_pass(cfg.model_path, cfg.placement, typ_toks);
    WeightFidelity f = compare_llm_passes(ref, ref_at, typ, typ_at, n, cfg.temperature);
    f.weight_type = cfg.placement.weight_type;
    f.priced = "text-turn " + cfg.turn;
    f.reference = "text-turn echo";
    return f;
}

void TtsFidelityConfig::validate() const {
    if (model_path.empty()) throw_usage("lm-fidelity: the TTS model path is empty");
    if (placement.weight_type == "file")
        throw_setting("weight-type", "must name a type to price against the file's own (file is the reference)");
    if (condition_rows < 1) throw_usage("lm-fidelity: condition rows must be >= 1");
    if (n_codes < 1) throw_setting("n", "codes must be >= 1, got " + std::to_string(n_codes));
}

WeightFidelity tts_weight_fidelity(const TtsFidelityConfig &cfg) {
    cfg.validate();
    TtsConfig rc;
    rc.model_path = cfg.model_path;
    rc.placement = cfg.placement;
    rc.placement.weight_type = "file";
    // Checked before two engines are loaded for nothing.
    const int64_t room = static_cast<int64_t>(rc.placement.n_ctx) - cfg.condition_rows - 1;
    if (cfg.n_codes > room)
        throw_usage("lm-fidelity: -n " + std::to_string(cfg.n_codes) + " TTS codes and " +
                    std::to_string(cfg.condition_rows) + " condition rows exceed the TTS context of " +
                    std::to_string(rc.placement.n_ctx) + " positions; use -n <= " + std::to_string(room));
    TtsEngine ref(rc);
    TtsConfig tc = rc;
    tc.placement.weight_type = cfg.placement.weight_type;
    TtsEngine typ(tc);
    const TtsWeights &w = ref.weights();
    const int E = w.dims().n_embd, nc = w.dims().n_codes;
    // Seeded condition rows: the scale of an embedding row, not of a final-norm output.
    std::mt19937 rng(cfg.seed);
    std::normal_distribution<float> nd(0.f, 0.5f);
    std::vector<float> rows(static_cast<size_t>(cfg.condition_rows) * static_cast<size_t>(E));
    for (auto &x : rows) x = nd(rng);
    TtsForward &fr = ref.forward();
    TtsForward &ft = typ.forward();
    fr.clear();
    ft.clear();
    fr.decode(rows.data(), cfg.condition_rows, 0);
    ft.decode(rows.data(), cfg.condition_rows, 0);
    FidelityAccumulator acc;
    std::vector<float> lr(static_cast<size_t>(nc)), lt(static_cast<size_t>(nc)), row(static_cast<size_t>(E));
    for (int k = 0; k < cfg.n_codes; ++k) {
        const auto zr = fr.hidden();
        const auto zt = ft.hidden();
        code_logits(zr, w.head(), nc, lr);
        code_logits(zt, w.head(), nc, lt);
        const auto pr = softmax_at(lr.data(), lr.size(), kCodeTemperature);
        acc.add(pr, softmax_at(lt.data(), lt.size(), kCodeTemperature));
        acc.add_hidden(zr.data(), zt.data(), zr.size());
        // Teacher forcing: both sides are fed the reference's most likely code (EOS excluded).
        const int code = static_cast<int>(std::max_element(pr.begin(), pr.end() - 1) - pr.begin());
        w.code_row(code, row.data());
        fr.decode(row.data(), 1, cfg.condition_rows + k);
        ft.decode(row.data(), 1, cfg.condition_rows + k);
    }
    WeightFidelity f = acc.result();
    f.stage = "tts";
    f.weight_type = cfg.placement.weight_type;
    f.reference_file = ref.derived_model_path();
    f.type_file = ensure_weight_type(ref.derived_model_path(), cfg.placement.weight_type, "tts");
    f.temperature = kCodeTemperature;
    return f;
}

}  // namespace rtf::lm
