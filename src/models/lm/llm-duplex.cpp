#include "models/lm/llm-duplex.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "core/elapsed.h"
#include "core/error.h"
#include "models/gguf/mapped-gguf.h"
#include "models/lm/condition.h"
#include "models/lm/llama-runtime.h"

namespace rtf::lm {

namespace {
using Clock = std::chrono::steady_clock;

std::vector<int32_t> tokenize_special(const llama_vocab *vocab, const std::string &text) {
    std::vector<int32_t> out(text.size() + 8);
    int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(),
                           static_cast<int32_t>(out.size()), /*add_special=*/false, /*parse_special=*/true);
    if (n < 0) {
        out.resize(static_cast<size_t>(-n));
        n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(),
                           static_cast<int32_t>(out.size()), false, true);
    }
    if (n < 0) throw_setup("llm: '" + text + "' could not be tokenized");
    out.resize(static_cast<size_t>(n));
    return out;
}

int32_t single_id(const llama_vocab *vocab, const std::string &text) {
    auto t = tokenize_special(vocab, text);
    return t.size() == 1 ? t[0] : -1;
}

// Rows `ids` of the GGUF's token_embd.weight as F32, n_embd each: the reference's fused path
// reads the fixed strings' rows this way instead of running them through the model's get_rows.
std::vector<float> token_rows(const std::string &path, const std::vector<int32_t> &ids, int n_embd) {
    gguf::MappedGguf f(path);
    auto t = f.find("token_embd.weight");
    if (!t) throw_setup(path + ": no tensor 'token_embd.weight' (the duplex prefill reads the <unit> rows from it)");
    if (t->ne[0] != n_embd)
        throw_setup(path + ": token_embd.weight has rows of " + std::to_string(t->ne[0]) + ", the model's n_embd is " +
                    std::to_string(n_embd));
    const size_t row_bytes = ggml_row_size(t->type, n_embd);
    std::vector<float> out(ids.size() * static_cast<size_t>(n_embd));
    const auto *traits = ggml_get_type_traits(t->type);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= t->ne[1])
            throw_setup(path + ": token " + std::to_string(ids[i]) + " is outside token_embd.weight (" +
                        std::to_string(t->ne[1]) + " rows)");
        const auto *src = static_cast<const char *>(t->data) + static_cast<size_t>(ids[i]) * row_bytes;
        float *dst = out.data() + i * static_cast<size_t>(n_embd);
        if (t->type == GGML_TYPE_F32) {
            std::memcpy(dst, src, static_cast<size_t>(n_embd) * sizeof(float));
        } else if (traits && traits->to_float) {
            traits->to_float(src, dst, n_embd);
        } else {
            throw_setup(path + ": token_embd.weight has type " + ggml_type_name(t->type) + ", which ggml cannot convert to f32");
        }
    }
    return out;
}
}  // namespace

void DuplexLlmConfig::validate() const {
    if (model_path.empty()) throw_usage("llm.model_path is empty: give the LLM GGUF (e.g. MiniCPM-o-4_5-Q4_K_M.gguf)");
    placement.validate("llm");
    if (max_speak_tokens < 1 || max_speak_tokens > 4096)
        throw_usage("llm.max_speak_tokens = " + std::to_string(max_speak_tokens) + ": use 1 .. 4096 (reference 26)");
    if (step_size < 1 || step_size > 4096) throw_usage("llm.step_size = " + std::to_string(step_size) + ": use 1 .. 4096 (reference 10)");
    if (forced_speak_tokens < 1 || forced_speak_tokens > max_speak_tokens)
        throw_usage("llm.forced_speak_tokens = " + std::to_string(forced_speak_tokens) + ": use 1 .. max_speak_tokens (" +
                    std::to_string(max_speak_tokens) + ")");
    if (text_cap < 0 || text_cap > max_speak_tokens)
        throw_usage("llm.text_cap = " + std::to_string(text_cap) + ": use 0 (none) .. max_speak_tokens (" +
                    std::to_string(max_speak_tokens) + ")");
    if (force_listen_count < 0) throw_usage("llm.force_listen_count = " + std::to_string(force_listen_count) + ": use 0 or more (reference 3)");
    if (!(listen_prob_scale > 0.0f) || !std::isfinite(listen_prob_scale)) throw_usage("llm.listen_prob_scale must be a finite number > 0 (1 = no edit)");
    if (!(length_penalty > 0.0f) || !std::isfinite(length_penalty)) throw_usage("llm.length_penalty must be a finite number > 0 (1 = no edit)");
    if (!(temperature > 0.0f) && !greedy) throw_usage("llm.temperature must be > 0 (use greedy mode for argmax)");
    if (top_k < 0) throw_usage("llm.top_k = " + std::to_string(top_k) + ": use 0 (off) or more");
    if (!(top_p > 0.0f && top_p <= 1.0f)) throw_usage("llm.top_p must be in (0, 1]");
    if (!(min_p >= 0.0f && min_p < 1.0f)) throw_usage("llm.min_p must be in [0, 1)");
    if (keep_tokens < 0 || keep_tokens >= static_cast<int>(placement.n_ctx) / 2)
        throw_usage("llm.keep_tokens = " + std::to_string(keep_tokens) + ": use 0 .. n_ctx/2 - 1 (" +
                    std::to_string(placement.n_ctx / 2 - 1) + ")");
}

nlohmann::json DuplexLlmConfig::to_json() const {
    return {{"model_path", model_path},
            {"placement", placement.to_json()},
            {"max_speak_tokens", max_speak_tokens},
            {"step_size", step_size},
            {"force_listen_count", force_listen_count},
            {"forced_speak_tokens", forced_speak_tokens},
            {"text_cap", text_cap},
            {"fuse_passes", fuse_passes},
            {"listen_prob_scale", listen_prob_scale},
            {"length_penalty", length_penalty},
            {"greedy", greedy},
            {"temperature", temperature},
            {"top_k", top_k},
            {"top_p", top_p},
            {"min_p", min_p},
            {"seed", seed},
            {"context_slide", context_slide},
            {"keep_tokens", keep_tokens}};
}

nlohmann::json DuplexTokens::to_json() const {
    return {{"speak", speak},         {"listen", listen},         {"chunk_eos", chunk_eos},
            {"chunk_tts_eos", chunk_tts_eos}, {"turn_eos", turn_eos}, {"tts_eos", tts_eos},
            {"tts_pad", tts_pad},     {"unit_open", unit_open},   {"unit_close", unit_close},
            {"unit_special", unit_special()}};
}

struct DuplexLlm::Impl {
    LlamaInstance inst;
    const llama_vocab *vocab = nullptr;
    LlamaSamplerPtr sampler;
    llama_batch batch{};       // token rows
    llama_batch batch_embd{};  // embedding rows
    int n_embd = 0, n_ctx = 0, n_batch = 0, n_vocab = 0;
    DuplexTokens tok;
    std::vector<float> unit_rows;      // unit_open.size() x n_embd
    std::map<int32_t, std::vector<float>> rows_of;  // fuse_passes: the embedding row of each token that may be deferred
    std::vector<int32_t> pending;      // fuse_passes: tokens fed at the head of the next prefill
    std::vector<int32_t> eog;          // end-of-generation ids (masked in forced speak frames)
    std::vector<llama_token_data> cur;  // sampling candidates
    int pos = 0;
    int frame = 0;
    bool slide = true;
    int keep = 0;
    int slides = 0;        // this session's
    int discarded = 0;     // positions dropped by slides, running total (frame() takes the difference)
    bool session = false;
    bool speaking = false;

    ~Impl() {
        llama_batch_free(batch);
        llama_batch_free(batch_embd);
    }

    // Room for n more positions. The reference slides once the positions plus the new rows
    // reach n_ctx (not only when they would overflow it): it drops half of what follows the
    // kept prefix, oldest first, and shifts the rest down so positions stay contiguous.
    void need(int n, const char *what) {
        if (slide && pos + n >= n_ctx) {
            const int n_discard = (pos - keep) / 2;
            if (n_discard > 0) {
                llama_memory_t mem = llama_get_memory(inst.ctx.get());
                if (!llama_memory_can_shift(mem))
                    throw_runtime("llm: context full at " + std::to_string(pos) + " of n_ctx " + std::to_string(n_ctx) +
                                  " and this context cannot shift positions (llama_memory_can_shift); raise n_ctx");
                if (!llama_memory_seq_rm(mem, 0, keep, keep + n_discard))
                    throw_runtime("llm: the context slide could not remove positions " + std::to_string(keep) + ".." +
                                  std::to_string(keep + n_discard) + ": " + take_llama_log());
                llama_memory_seq_add(mem, 0, keep + n_discard, pos, -n_discard);
                pos -= n_discard;
                discarded += n_discard;
                ++slides;
            }
        }
        if (pos + n > n_ctx)
            throw_runtime("llm: context full: the " + std::string(what) + " needs " + std::to_string(n) +
                          " positions at " + std::to_string(pos) + " of n_ctx " + std::to_string(n_ctx) +
                          (slide ? " even after sliding (raise n_ctx)" : " (context_slide is off; raise n_ctx or send fewer frames)"));
    }

    void decode_tokens(const int32_t *toks, int n, const char *what) {
        need(n, what);
        for (int s = 0; s < n; s += n_batch) {
            const int m = std::min(n_batch, n - s);
            batch.n_tokens = m;
            for (int i = 0; i < m; ++i) {
                batch.token[i] = toks[s + i];
                batch.pos[i] = pos + i;
                batch.n_seq_id[i] = 1;
                batch.seq_id[i][0] = 0;
                batch.logits[i] = s + i == n - 1;
            }
            check(locked_decode(inst, batch), what);
            pos += m;
        }
    }

    void decode_rows(const float *rows, int n, const char *what) {
        need(n, what);
        for (int s = 0; s < n; s += n_batch) {
            const int m = std::min(n_batch, n - s);
            batch_embd.n_tokens = m;
            std::memcpy(batch_embd.embd, rows + static_cast<size_t>(s) * static_cast<size_t>(n_embd),
                        static_cast<size_t>(m) * static_cast<size_t>(n_embd) * sizeof(float));
            for (int i = 0; i < m; ++i) {
                batch_embd.pos[i] = pos + i;
                batch_embd.n_seq_id[i] = 1;
                batch_embd.seq_id[i][0] = 0;
                batch_embd.logits[i] = s + i == n - 1;
            }
            check(locked_decode(inst, batch_embd), what);
            pos += m;
        }
    }

    void check(int rc, const char *what) const {
        if (rc != 0)
            throw_runtime(std::string("llm: llama_decode failed for the ") + what + " (code " + std::to_string(rc) +
                          ") at position " + std::to_string(pos) + ": " + take_llama_log());
    }

    void new_sampler(const DuplexLlmConfig &c) {
        sampler.reset(llama_sampler_chain_init(llama_sampler_chain_default_params()));
        llama_sampler *ch = sampler.get();
        if (c.greedy) {
            llama_sampler_chain_add(ch, llama_sampler_init_greedy());
            return;
        }
        if (c.top_k > 0) llama_sampler_chain_add(ch, llama_sampler_init_top_k(c.top_k));
        llama_sampler_chain_add(ch, llama_sampler_init_top_p(c.top_p, 1));
        llama_sampler_chain_add(ch, llama_sampler_init_min_p(c.min_p, 1));
        llama_sampler_chain_add(ch, llama_sampler_init_temp(c.temperature));
        llama_sampler_chain_add(ch, llama_sampler_init_dist(c.seed));
    }

    // One token from the last decode's logits after the duplex logit edits (docs/minicpmo45.md
    // §7.3); `mask_ends`: a forced speak frame, where nothing may end the frame or the turn.
    int32_t sample(const DuplexLlmConfig &c, bool mask_ends) {
        const float *logits = llama_get_logits_ith(inst.ctx.get(), -1);
        if (!logits) throw_runtime("llm: libllama returned no logits: " + take_llama_log());
        cur.resize(static_cast<size_t>(n_vocab));
        for (int i = 0; i < n_vocab; ++i) cur[static_cast<size_t>(i)] = {i, logits[i], 0.0f};
        auto set = [&](int32_t id, auto f) {
            if (id >= 0 && id < n_vocab) cur[static_cast<size_t>(id)].logit = f(cur[static_cast<size_t>(id)].logit);
        };
        set(tok.listen, [&](float l) { return l + 2.0f * (c.listen_prob_scale - 1.0f); });
        set(tok.tts_pad, [](float) { return -INFINITY; });
        if (c.length_penalty != 1.0f)
            set(tok.turn_eos, [&](float l) { return l > 0 ? l / c.length_penalty : l * c.length_penalty; });
        if (mask_ends) {
            auto off = [](float) { return -INFINITY; };
            for (int32_t id : {tok.listen, tok.chunk_eos, tok.chunk_tts_eos, tok.turn_eos, tok.tts_eos}) set(id, off);
            for (int32_t id : eog) set(id, off);
        }
        llama_token_data_array arr{cur.data(), cur.size(), -1, false};
        llama_sampler_apply(sampler.get(), &arr);
        if (arr.selected < 0 || static_cast<size_t>(arr.selected) >= arr.size)
            throw_runtime("llm: the sampler selected no token");
        const int32_t t = arr.data[arr.selected].id;
        llama_sampler_accept(sampler.get(), t);
        return t;
    }

    std::string text_of(int32_t t, bool special) const {
        char buf[256];
        const int n = llama_token_to_piece(vocab, t, buf, sizeof buf, 0, special);
        return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    }
};

DuplexLlm::DuplexLlm(const DuplexLlmConfig &cfg) : p_(std::make_unique<Impl>()), cfg_(cfg) {
    const auto t0 = Clock::now();
    cfg_.validate();
    Impl &p = *p_;
    p.inst = load_llama(cfg_.model_path, cfg_.placement, /*embeddings=*/true, "llm");
    p.vocab = llama_model_get_vocab(p.inst.model.get());
    p.n_embd = llama_model_n_embd(p.inst.model.get());
    p.n_ctx = static_cast<int>(llama_n_ctx(p.inst.ctx.get()));
    p.n_batch = static_cast<int>(cfg_.placement.n_batch);
    p.n_vocab = llama_vocab_n_tokens(p.vocab);
    p.batch = llama_batch_init(p.n_batch, 0, 1);
    p.batch_embd = llama_batch_init(p.n_batch, p.n_embd, 1);
    p.tok.speak = single_id(p.vocab, "<|speak|>");
    p.tok.listen = single_id(p.vocab, "<|listen|>");
    p.tok.chunk_eos = single_id(p.vocab, "<|chunk_eos|>");
    p.tok.chunk_tts_eos = single_id(p.vocab, "<|chunk_tts_eos|>");
    p.tok.turn_eos = single_id(p.vocab, "<|turn_eos|>");
    p.tok.tts_eos = single_id(p.vocab, "<|tts_eos|>");
    p.tok.tts_pad = single_id(p.vocab, "<|tts_pad|>");
    p.tok.unit_open = tokenize_special(p.vocab, "<unit>");
    p.tok.unit_close = tokenize_special(p.vocab, "</unit>");
    if (p.tok.unit_open.empty() || p.tok.unit_close.empty()) throw_setup(cfg_.model_path + ": '<unit>' tokenises to nothing");
    p.unit_rows = token_rows(cfg_.model_path, p.tok.unit_open, p.n_embd);
    if (cfg_.fuse_passes) {
        std::vector<int32_t> ids = p.tok.unit_close;
        for (int32_t t : {p.tok.speak, p.tok.listen, p.tok.chunk_eos, p.tok.chunk_tts_eos})
            if (t >= 0) ids.push_back(t);
        const std::vector<float> all = token_rows(cfg_.model_path, ids, p.n_embd);
        for (size_t i = 0; i < ids.size(); ++i)
            p.rows_of[ids[i]].assign(all.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(p.n_embd)),
                                     all.begin() + static_cast<std::ptrdiff_t>((i + 1) * static_cast<size_t>(p.n_embd)));
    }
    for (int i = 0; i < p.n_vocab; ++i)
        if (llama_vocab_is_eog(p.vocab, i)) p.eog.push_back(i);
    load_ms_ = ms_since(t0);
}

DuplexLlm::~DuplexLlm() = default;

int DuplexLlm::n_embd() const { return p_->n_embd; }
int DuplexLlm::n_ctx() const { return p_->n_ctx; }
int DuplexLlm::n_past() const { return p_->pos; }
int DuplexLlm::n_slides() const { return p_->slides; }
std::pair<int, int> DuplexLlm::kv_span() const {
    llama_memory_t mem = llama_get_memory(p_->inst.ctx.get());
    return {static_cast<int>(llama_memory_seq_pos_min(mem, 0)), static_cast<int>(llama_memory_seq_pos_max(mem, 0))};
}
bool DuplexLlm::speaking() const { return p_->speaking; }
const DuplexTokens &DuplexLlm::tokens() const { return p_->tok; }
std::string DuplexLlm::piece(int32_t token) const { return p_->text_of(token, false); }

void DuplexLlm::begin_session() {
    Impl &p = *p_;
    llama_memory_clear(llama_get_memory(p.inst.ctx.get()), true);
    p.new_sampler(cfg_);
    p.pos = 0;
    p.frame = 0;
    p.speaking = false;
    p.session = true;
    p.slide = cfg_.context_slide;
    p.keep = cfg_.keep_tokens;
    p.slides = 0;
    p.discarded = 0;
    p.pending.clear();
}

void DuplexLlm::warm() {
    Impl &p = *p_;
    begin_session();
    std::vector<float> rows;
    for (int k = 0; k < 11; ++k) rows.insert(rows.end(), p.unit_rows.begin(), p.unit_rows.begin() + p.n_embd);
    const int n = std::min(11, p.n_ctx - 2);
    if (n >= 1) {
        p.decode_rows(rows.data(), n, "warm-up");
        const int32_t t = p.tok.unit_close[0];
        p.decode_tokens(&t, 1, "warm-up");
    }
    begin_session();
    p.session = false;
}

DuplexFrameResult DuplexLlm::frame(const float *rows, int n_rows, std::optional<bool> forced,
                                   const std::function<void(DuplexMessage &&)> &on_message) {
    Impl &p = *p_;
    if (!p.session) throw_usage("llm: frame() without a session (call begin_session() first)");
    if (n_rows < 1 || !rows) throw_usage("llm: a duplex frame needs at least one embedding row");
    DuplexFrameResult r;
    r.frame = p.frame++;
    r.n_embd = p.n_embd;
    r.n_past_before = p.pos;
    const int discarded_before = p.discarded;

    // 1. prefill: <unit> rows + the audio rows in one embedding batch; with fuse_passes led by
    // the previous frame's closing tokens and ended by a forced decision.
    const bool fuse = cfg_.fuse_passes;
    const bool decides = r.frame >= cfg_.force_listen_count;
    int32_t fused_decision = -1;
    if (fuse && decides && forced) fused_decision = *forced ? p.tok.speak : p.tok.listen;
    std::vector<int32_t> lead;
    lead.swap(p.pending);
    const int n_unit = static_cast<int>(p.tok.unit_open.size());
    const int n_lead = static_cast<int>(lead.size()), n_tail = fused_decision >= 0 ? 1 : 0;
    const size_t d = static_cast<size_t>(p.n_embd);
    std::vector<float> all(static_cast<size_t>(n_lead + n_unit + n_rows + n_tail) * d);
    float *w = all.data();
    for (int32_t t : lead) w = std::copy(p.rows_of.at(t).begin(), p.rows_of.at(t).end(), w);
    w = std::copy(p.unit_rows.begin(), p.unit_rows.end(), w);
    std::memcpy(w, rows, static_cast<size_t>(n_rows) * d * sizeof(float));
    w += static_cast<size_t>(n_rows) * d;
    if (n_tail) std::copy(p.rows_of.at(fused_decision).begin(), p.rows_of.at(fused_decision).end(), w);
    r.n_prefill_rows = n_unit + n_rows;
    r.n_fused_rows = n_lead + n_tail;
    // A token that needs no logits of its own: fed now, or (fuse_passes) at the next prefill.
    auto feed_later = [&](const int32_t *t, int n, const char *what) {
        if (fuse) p.pending.insert(p.pending.end(), t, t + n);
        else p.decode_tokens(t, n, what);
    };
    auto t0 = Clock::now();
    p.decode_rows(all.data(), n_lead + n_unit + n_rows + n_tail, "frame prefill");
    r.prefill_ms = ms_since(t0);

    std::vector<int32_t> pend_ids;
    std::vector<float> pend_hidden;
    auto send = [&](bool finish, bool eot) {
        DuplexMessage m;
        m.frame = r.frame;
        m.ids = std::move(pend_ids);
        m.hidden = std::move(pend_hidden);
        m.llm_finish = finish;
        m.end_of_turn = eot;
        pend_ids.clear();
        pend_hidden.clear();
        on_message(std::move(m));
    };
    auto listen = [&] {
        if (p.speaking) send(true, true);  // a listen right after speaking ends the TTS turn
        p.speaking = false;
    };

    t0 = Clock::now();
    if (r.frame < cfg_.force_listen_count) {
        // 2. force_listen: no decode at all
        r.force_listen = true;
        listen();
    } else {
        // 3. decision
        int32_t first = -1;
        if (forced) {
            r.forced = true;
            r.is_speak = *forced;
            const int32_t t = r.is_speak ? p.tok.speak : p.tok.listen;
            if (t >= 0) {
                if (t != fused_decision) p.decode_tokens(&t, 1, "decision");  // fused: it ended the prefill
                r.decision = p.text_of(t, true);
            }
        } else {
            first = p.sample(cfg_, false);
            r.decision = p.text_of(first, true);
            r.is_speak = first != p.tok.listen;
            if (!r.is_speak) feed_later(&first, 1, "decision");
        }
        if (!r.is_speak) {
            listen();
        } else {
            // 4. speak: one token at a time until an end token or the budget
            p.speaking = true;
            // A sampled frame on a twin stops where a real model would have (text_cap).
            const bool capped = !r.forced && cfg_.text_cap > 0 && cfg_.text_cap < cfg_.max_speak_tokens;
            const int limit = r.forced ? cfg_.forced_speak_tokens : capped ? cfg_.text_cap : cfg_.max_speak_tokens;
            auto consume = [&](int32_t t) -> bool {
                if (t == p.tok.listen || t == p.tok.chunk_eos || t == p.tok.chunk_tts_eos) {
                    feed_later(&t, 1, "end token");
                    r.end = t == p.tok.listen ? "listen" : t == p.tok.chunk_eos ? "chunk_eos" : "chunk_tts_eos";
                    if (t == p.tok.listen) r.end_of_turn = true;
                    return true;
                }
                p.decode_tokens(&t, 1, "reply");
                r.text += p.text_of(t, false);
                if (t == p.tok.turn_eos || t == p.tok.tts_eos || llama_vocab_is_eog(p.vocab, t)) r.end_of_turn = true;
                if (is_valid_text_token(t)) {
                    const float *h = llama_get_embeddings_ith(p.inst.ctx.get(), -1);
                    if (!h) throw_runtime("llm: libllama returned no embeddings: " + take_llama_log());
                    r.ids.push_back(t);
                    r.hidden.insert(r.hidden.end(), h, h + p.n_embd);
                    pend_ids.push_back(t);
                    pend_hidden.insert(pend_hidden.end(), h, h + p.n_embd);
                    if (static_cast<int>(pend_ids.size()) == cfg_.step_size && static_cast<int>(r.ids.size()) < limit)
                        send(false, false);
                }
                if (static_cast<int>(r.ids.size()) >= limit) {
                    if (p.tok.chunk_eos >= 0) feed_later(&p.tok.chunk_eos, 1, "chunk end");
                    r.end = capped ? "twin_text_cap" : limit == cfg_.max_speak_tokens ? "budget" : "forced";
                    return true;
                }
                return false;
            };
            bool over = false;
            if (first >= 0) {
                ++r.n_sampled;
                over = consume(first);
            }
            while (!over) {
                const int32_t t = p.sample(cfg_, r.forced);
                ++r.n_sampled;
                over = consume(t);
            }
            send(true, r.end_of_turn);
            if (r.end_of_turn) p.speaking = false;
        }
    }
    r.decode_ms = ms_since(t0);

    // 6. </unit>
    t0 = Clock::now();
    feed_later(p.tok.unit_close.data(), static_cast<int>(p.tok.unit_close.size()), "</unit>");
    r.unit_end_ms = ms_since(t0);
    r.n_past_after = p.pos;
    r.n_discarded = p.discarded - discarded_before;
    return r;
}

std::optional<DuplexMessage> DuplexLlm::end_session() {
    Impl &p = *p_;
    if (!p.speaking) return std::nullopt;
    p.speaking = false;
    DuplexMessage m;
    m.frame = p.frame - 1;
    m.llm_finish = true;
    m.end_of_turn = true;
    return m;
}

}  // namespace rtf::lm
