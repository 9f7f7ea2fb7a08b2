#include "models/lm/llm-engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/elapsed.h"
#include "core/error.h"
#include "models/lm/condition.h"
#include "models/lm/decode-batcher.h"
#include "models/lm/llama-runtime.h"

namespace rtf::lm {

namespace {
using Clock = std::chrono::steady_clock;

// Offset of the first byte that breaks UTF-8 (overlongs, surrogates, > U+10FFFF included), or npos.
size_t utf8_error(std::string_view s) {
    size_t i = 0;
    const auto *u = reinterpret_cast<const unsigned char *>(s.data());
    while (i < s.size()) {
        const unsigned c = u[i];
        int n;
        uint32_t cp;
        if (c < 0x80) { ++i; continue; }
        if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
        else return i;
        if (i + static_cast<size_t>(n) >= s.size()) return i;  // truncated sequence
        for (int k = 1; k <= n; ++k) {
            const unsigned cc = u[i + static_cast<size_t>(k)];
            if ((cc & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += static_cast<size_t>(n) + 1;
    }
    return std::string_view::npos;
}
}  // namespace

void check_text(std::string_view text, const std::string &what) {
    if (std::all_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }))
        throw_usage(what + " is empty: give some text to speak");
    const size_t bad = utf8_error(text);
    if (bad != std::string_view::npos)
        throw_usage(what + " is not valid UTF-8 (bad byte 0x" + [&] {
            char b[3];
            std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(text[bad]));
            return std::string(b);
        }() + " at offset " + std::to_string(bad) + ")");
}

void LlmConfig::validate() const {
    if (model_path.empty()) throw_usage("llm.model_path is empty: give the LLM GGUF (e.g. MiniCPM-o-4_5-Q4_K_M.gguf)");
    placement.validate("llm");
    if (llm_step < 1 || llm_step > 4096) throw_usage("llm.llm_step = " + std::to_string(llm_step) + ": use 1 .. 4096 tokens");
    if (max_tokens < 0) throw_usage("llm.max_tokens = " + std::to_string(max_tokens) + ": use 0 (until a stop) or more");
    if (!(temperature > 0.0f) && !greedy) throw_usage("llm.temperature must be > 0 (use greedy mode for argmax)");
    if (top_k < 0) throw_usage("llm.top_k = " + std::to_string(top_k) + ": use 0 (off) or more");
    if (!(top_p > 0.0f && top_p <= 1.0f)) throw_usage("llm.top_p must be in (0, 1]");
    if (!(min_p >= 0.0f && min_p < 1.0f)) throw_usage("llm.min_p must be in [0, 1)");
    if (text_turn != "echo" && text_turn != "fixed")
        throw_setting("text-turn", "'" + text_turn + "': use echo (the text as the user turn) or fixed (a fixed instruction)");
}

nlohmann::json LlmConfig::to_json() const {
    return {{"model_path", model_path}, {"placement", placement.to_json()}, {"llm_step", llm_step},
            {"max_tokens", max_tokens}, {"greedy", greedy},                 {"temperature", temperature},
            {"top_k", top_k},           {"top_p", top_p},                   {"min_p", min_p},
            {"seed", seed},             {"system_prompt", system_prompt},   {"chat_template", chat_template},
            {"text_turn", text_turn},   {"prompt_cache", prompt_cache}};
}

nlohmann::json LlmTimings::to_json() const {
    return {{"load_ms", load_ms},     {"n_prompt", n_prompt},   {"n_prompt_cached", n_prompt_cached}, {"prefill_ms", prefill_ms},
            {"n_decoded", n_decoded}, {"decode_ms", decode_ms}, {"sample_ms", sample_ms}, {"batched", batched},
            {"mean_batch", mean_batch}};
}

struct LlmEngine::Impl {
    LlamaInstance inst;  // alone: the model and its own context
    // batched: the shared context's sequence (decode-batcher.h); `inst` stays empty
    std::shared_ptr<DecodeBatcher> batcher;
    std::unique_ptr<DecodeBatcher::Stream> bs;
    const DecodeResult *res = nullptr;  // the last batched decode's outputs
    const llama_model *model = nullptr;
    const llama_vocab *vocab = nullptr;
    LlamaSamplerPtr sampler;
    llama_batch batch{};
    int n_embd = 0, n_ctx = 0, n_batch = 0;
    int32_t tts_eos = -1, tts_bos = -1;
    enum class Mode { Idle, Generate, Forced } mode = Mode::Idle;
    int pos = 0;           // next KV position
    int n_generated = 0;   // reply tokens so far
    // forced (text) mode
    std::vector<int32_t> forced_ids;
    std::vector<float> forced_hidden;
    size_t forced_next = 0;  // next reply token to hand out
    size_t forced_done = 0;  // reply tokens whose hidden rows are computed
    int forced_pos0 = 0;     // position of the first reply token
    // Prompt cache: the tokens whose KV sits in sequence 0 at positions 0..size()-1 and may
    // be reused by the next prompt (the last prompt; never the reply after it).
    std::vector<int32_t> kv_prompt;

    ~Impl() { llama_batch_free(batch); }

    // KV of this engine's sequence at positions >= p0 dropped (0 = all).
    void kv_rm(int p0) {
        if (bs) bs->seq_rm(p0);
        else if (p0 == 0) llama_memory_clear(llama_get_memory(inst.ctx.get()), true);
        else llama_memory_seq_rm(llama_get_memory(inst.ctx.get()), 0, p0, -1);
    }
    // Embedding row of output i of the last decode (-1 = the last output).
    const float *embd(int i) const {
        if (!bs) return llama_get_embeddings_ith(inst.ctx.get(), i);
        if (!res || res->embd.empty()) return nullptr;
        return res->embd_row(i < 0 ? res->n_out - 1 : i);
    }
    // The next token from the last decode's last logits. Batched: the steps of
    // llama_sampler_sample on the copied logits (same candidates, same chain, same result).
    int32_t sample() {
        if (!bs) return llama_sampler_sample(sampler.get(), inst.ctx.get(), -1);
        if (!res || res->logits.empty()) throw_runtime("llm: no logits to sample from (batched decode)");
        const float *lg = res->logits_row(res->n_out - 1);
        cur.resize(static_cast<size_t>(res->n_vocab));
        for (int t = 0; t < res->n_vocab; ++t) cur[static_cast<size_t>(t)] = llama_token_data{t, lg[t], 0.0f};
        llama_token_data_array arr{cur.data(), cur.size(), -1, false};
        llama_sampler_apply(sampler.get(), &arr);
        if (arr.selected < 0 || arr.selected >= static_cast<int64_t>(arr.size))
            throw_runtime("llm: the sampler chain selected no token");
        const int32_t tok = arr.data[arr.selected].id;
        llama_sampler_accept(sampler.get(), tok);
        return tok;
    }
    std::vector<llama_token_data> cur;
    int64_t batch_mark_n = 0, batch_mark_sum = 0;  // the stream's counters at the reply's start
    // Keeps the longest common prefix of `toks` with the cached prompt, drops the rest of the
    // KV and returns the prefix length (0 when `use` is false). `need_logits`: sampling needs
    // the last token's logits, so a tail is decoded again even when all of it is cached; that
    // tail is at least 2 tokens, because ggml's single-row products take another kernel than
    // batched ones, and a 1-token tail would give other bits than the full prefill did.
    int reuse_prompt(const std::vector<int32_t> &toks, bool use, bool need_logits) {
        size_t c = 0;
        if (use)
            while (c < toks.size() && c < kv_prompt.size() && toks[c] == kv_prompt[c]) ++c;
        if (need_logits && toks.size() - c < 2) c = toks.size() >= 2 ? toks.size() - 2 : 0;
        kv_rm(static_cast<int>(c));  // c == 0: all of it
        kv_prompt.clear();  // set again once the new prompt is decoded
        return static_cast<int>(c);
    }

    void decode(const int32_t *toks, int n, int pos0, bool all_outputs, const char *what) {
        for (int s = 0; s < n; s += n_batch) {
            const int m = std::min(n_batch, n - s);
            if (bs) {
                DecodeRequest r;
                r.tokens = toks + s;
                r.n = m;
                r.pos0 = pos0 + s;
                r.all_outputs = all_outputs;
                r.want_embd = true;
                r.want_logits = !all_outputs && s + m == n;  // sampling reads the last row's
                res = &bs->decode(r);
                continue;
            }
            batch.n_tokens = m;
            for (int i = 0; i < m; ++i) {
                batch.token[i] = toks[s + i];
                batch.pos[i] = pos0 + s + i;
                batch.n_seq_id[i] = 1;
                batch.seq_id[i][0] = 0;
                batch.logits[i] = all_outputs || (s + i == n - 1);
            }
            const int rc = locked_decode(inst, batch);
            if (rc != 0)
                throw_runtime(std::string("llm: llama_decode failed for the ") + what + " (code " + std::to_string(rc) +
                              ") at position " + std::to_string(pos0 + s) + ": " + take_llama_log());
        }
    }
};

void LlmEngine::interrupt_decode() {
    if (p_->bs) p_->bs->cancel();
}

void LlmEngine::resume_decode() {
    if (p_->bs) p_->bs->resume();
}

LlmEngine::LlmEngine(const LlmConfig &cfg, std::shared_ptr<DecodeBatcher> batcher)
    : p_(std::make_unique<Impl>()), cfg_(cfg) {
    const auto t0 = Clock::now();
    cfg_.validate();
    if (batcher) {
        if (!batcher->backend().model()) throw_usage("llm: the decode batcher has no libllama model");
        p_->batcher = std::move(batcher);
        p_->bs = p_->batcher->join();
        p_->model = p_->batcher->backend().model();
        p_->n_ctx = p_->batcher->backend().n_ctx_seq();
        p_->n_batch = std::min(static_cast<int>(cfg_.placement.n_batch), p_->batcher->config().max_rows);
    } else {
        p_->inst = load_llama(cfg_.model_path, cfg_.placement, /*embeddings=*/true, "llm");
        p_->model = p_->inst.model.get();
        p_->n_ctx = static_cast<int>(llama_n_ctx(p_->inst.ctx.get()));
        p_->n_batch = static_cast<int>(cfg_.placement.n_batch);
    }
    p_->vocab = llama_model_get_vocab(p_->model);
    p_->n_embd = llama_model_n_embd(p_->model);
    p_->batch = llama_batch_init(p_->n_batch, 0, 1);
    p_->tts_eos = special_id("<|tts_eos|>");
    p_->tts_bos = special_id("<|tts_bos|>");
    timings_.load_ms = ms_since(t0);
}

LlmEngine::~LlmEngine() = default;

int LlmEngine::n_embd() const { return p_->n_embd; }
int64_t LlmEngine::device_io_bytes() const {
    return p_->bs || p_->inst.devices.empty() ? -1 : static_cast<int64_t>(p_->inst.device_io_bytes);
}
int LlmEngine::n_ctx() const { return p_->n_ctx; }

std::vector<int32_t> LlmEngine::tokenize(const std::string &text, bool parse_special) const {
    std::vector<int32_t> out(text.size() + 8);
    int n = llama_tokenize(p_->vocab, text.data(), static_cast<int32_t>(text.size()), out.data(),
                           static_cast<int32_t>(out.size()), /*add_special=*/false, parse_special);
    if (n < 0) {
        out.resize(static_cast<size_t>(-n));
        n = llama_tokenize(p_->vocab, text.data(), static_cast<int32_t>(text.size()), out.data(),
                           static_cast<int32_t>(out.size()), false, parse_special);
    }
    if (n < 0) throw_usage("llm: the text could not be tokenized (" + std::to_string(text.size()) + " bytes)");
    out.resize(static_cast<size_t>(n));
    return out;
}

std::string LlmEngine::piece(int32_t token) const {
    char buf[256];
    const int n = llama_token_to_piece(p_->vocab, token, buf, sizeof buf, 0, /*special=*/false);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int32_t LlmEngine::special_id(const std::string &text) const {
    auto t = tokenize(text, true);
    return t.size() == 1 ? t[0] : -1;
}

namespace {
// Spec §2.2 (simplex): user turn, then "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<|tts_bos|>".
// User text is tokenized without special-token parsing so it cannot inject control tokens.
// `user_at`: set to where the user's text starts (the prompt before it is the same for
// every user text: what warm() caches).
std::vector<int32_t> build_prompt(const LlmEngine &e, const LlmConfig &cfg, int32_t tts_bos, const std::string &user,
                                  size_t *user_at = nullptr) {
    std::vector<int32_t> out;
    auto add = [&](const std::string &s, bool special) {
        auto t = e.tokenize(s, special);
        out.insert(out.end(), t.begin(), t.end());
    };
    if (!cfg.chat_template) {
        add(user, false);
        return out;
    }
    if (!cfg.system_prompt.empty()) add("<|im_start|>system\n" + cfg.system_prompt + "<|im_end|>\n", true);
    add("<|im_start|>user\n", true);
    if (user_at) *user_at = out.size();
    add(user, false);
    add("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", true);
    if (tts_bos >= 0) out.push_back(tts_bos);
    return out;
}
}  // namespace

void LlmEngine::start(const std::string &prompt) {
    check_text(prompt, "the prompt");
    auto toks = build_prompt(*this, cfg_, p_->tts_bos, prompt);
    if (static_cast<int>(toks.size()) >= p_->n_ctx)
        throw_usage("prompt of " + std::to_string(toks.size()) + " tokens exceeds context " + std::to_string(p_->n_ctx) +
                    " (raise the LLM n_ctx or shorten the prompt)");
    // A fresh chain per reply: the same seed gives the same reply.
    p_->sampler.reset(llama_sampler_chain_init(llama_sampler_chain_default_params()));
    llama_sampler *ch = p_->sampler.get();
    if (cfg_.greedy) {
        llama_sampler_chain_add(ch, llama_sampler_init_greedy());
    } else {
        if (cfg_.top_k > 0) llama_sampler_chain_add(ch, llama_sampler_init_top_k(cfg_.top_k));
        llama_sampler_chain_add(ch, llama_sampler_init_top_p(cfg_.top_p, 1));
        llama_sampler_chain_add(ch, llama_sampler_init_min_p(cfg_.min_p, 1));
        llama_sampler_chain_add(ch, llama_sampler_init_temp(cfg_.temperature));
        llama_sampler_chain_add(ch, llama_sampler_init_dist(cfg_.seed));
    }
    reset_timings();
    ActiveScope active(p_->bs.get());
    const auto t0 = Clock::now();
    const int cached = p_->reuse_prompt(toks, cfg_.prompt_cache, /*need_logits=*/true);
    p_->decode(toks.data() + cached, static_cast<int>(toks.size()) - cached, cached, false, "prompt");
    p_->kv_prompt = toks;
    timings_.prefill_ms = ms_since(t0);
    timings_.n_prompt = static_cast<int>(toks.size());
    timings_.n_prompt_cached = cached;
    p_->pos = static_cast<int>(toks.size());
    p_->n_generated = 0;
    p_->mode = Impl::Mode::Generate;
}

std::vector<int32_t> LlmEngine::text_mode_tokens(const std::string &text, const std::string &turn, size_t *reply_at) const {
    if (turn != "echo" && turn != "fixed")
        throw_setting("text-turn", "'" + turn + "': use echo (the text as the user turn) or fixed (a fixed instruction)");
    auto toks = build_prompt(*this, cfg_, p_->tts_bos, turn == "fixed" ? kFixedTextTurn : text);
    if (reply_at) *reply_at = toks.size();
    const auto reply = tokenize(text, false);
    toks.insert(toks.end(), reply.begin(), reply.end());
    return toks;
}

void LlmEngine::start_text(const std::string &text) {
    check_text(text, "the text");
    size_t reply_at = 0;
    auto prefix = text_mode_tokens(text, cfg_.text_turn, &reply_at);
    const std::vector<int32_t> reply(prefix.begin() + static_cast<ptrdiff_t>(reply_at), prefix.end());
    prefix.resize(reply_at);
    const size_t n_all = prefix.size() + reply.size();
    if (static_cast<int>(n_all) > p_->n_ctx)
        throw_usage("prompt of " + std::to_string(n_all) + " tokens (template + text) exceeds context " +
                    std::to_string(p_->n_ctx) + " (raise the LLM n_ctx or shorten the text)");
    reset_timings();
    ActiveScope active(p_->bs.get());
    const auto t0 = Clock::now();
    const int cached = p_->reuse_prompt(prefix, cfg_.prompt_cache, /*need_logits=*/false);
    p_->decode(prefix.data() + cached, static_cast<int>(prefix.size()) - cached, cached, false, "prompt");
    p_->kv_prompt = prefix;
    timings_.prefill_ms = ms_since(t0);
    timings_.n_prompt = static_cast<int>(n_all);
    timings_.n_prompt_cached = cached;
    // The reply's hidden states are computed lazily, a step's worth per next_step() (see
    // forced_compute): the first step leaves after the template + llm_step tokens, not
    // after the whole text, which is what the first audio waits for.
    p_->forced_ids = reply;
    p_->forced_hidden.assign(reply.size() * static_cast<size_t>(p_->n_embd), 0.0f);
    p_->forced_done = 0;
    p_->forced_pos0 = static_cast<int>(prefix.size());
    p_->pos = static_cast<int>(n_all);
    p_->forced_next = 0;
    p_->mode = Impl::Mode::Forced;
}

void LlmEngine::forced_compute(size_t upto) {
    Impl &p = *p_;
    upto = std::min(upto, p.forced_ids.size());
    const auto t0 = Clock::now();
    while (p.forced_done < upto) {
        const size_t s = p.forced_done;
        const int m = static_cast<int>(std::min(upto - s, static_cast<size_t>(p.n_batch)));
        p.decode(p.forced_ids.data() + s, m, p.forced_pos0 + static_cast<int>(s), true, "text");
        for (int i = 0; i < m; ++i) {
            const float *e = p.embd(i);
            if (!e) throw_runtime("llm: libllama returned no embeddings for the text: " + take_llama_log());
            std::memcpy(p.forced_hidden.data() + (s + static_cast<size_t>(i)) * static_cast<size_t>(p.n_embd), e,
                        static_cast<size_t>(p.n_embd) * sizeof(float));
        }
        p.forced_done += static_cast<size_t>(m);
    }
    timings_.prefill_ms += ms_since(t0);
}

void LlmEngine::warm() {
    // A throw-away prompt pass (all outputs, as text mode runs) and one single-token decode:
    // the first reply then pays no first-touch costs (weight pages, compute buffers, thread
    // start-up). The KV cache is emptied after; start()/start_text() clear it anyway.
    auto toks = build_prompt(*this, cfg_, p_->tts_bos, "Hello, how are you today?");
    const int n = static_cast<int>(std::min<size_t>(toks.size(), static_cast<size_t>(p_->n_batch)));
    if (n < 1 || n + 1 > p_->n_ctx) return;
    p_->kv_rm(0);
    p_->kv_prompt.clear();
    p_->decode(toks.data(), n, 0, true, "warm-up");
    p_->decode(toks.data(), 1, n, false, "warm-up");
    p_->kv_rm(0);
    if (!cfg_.prompt_cache) return;
    // The shared part of every prompt, decoded once now: with text mode "fixed" the whole
    // template; otherwise what precedes the user's words (system turn, user-turn header).
    if (!cfg_.chat_template) return;
    size_t user_at = 0;
    std::vector<int32_t> shared = build_prompt(*this, cfg_, p_->tts_bos, kFixedTextTurn, &user_at);
    if (cfg_.text_turn != "fixed") shared.resize(user_at);
    if (shared.empty() || static_cast<int>(shared.size()) >= p_->n_ctx) return;
    p_->decode(shared.data(), static_cast<int>(shared.size()), 0, false, "prompt cache");
    p_->kv_prompt = shared;
}

void LlmEngine::reset_timings() {
    if (p_->bs) {
        p_->batch_mark_n = p_->bs->n_decodes();
        p_->batch_mark_sum = p_->bs->sum_batch();
    }
    LlmTimings t;
    t.load_ms = timings_.load_ms;
    timings_ = t;
}

bool LlmEngine::done() const { return p_->mode == Impl::Mode::Idle; }

bool LlmEngine::batched() const { return p_->bs != nullptr; }

double LlmEngine::mean_batch() const {
    if (!p_->bs) return 1.0;
    const int64_t n = p_->bs->n_decodes() - p_->batch_mark_n;
    return n > 0 ? static_cast<double>(p_->bs->sum_batch() - p_->batch_mark_sum) / static_cast<double>(n) : 0.0;
}

LlmStep LlmEngine::next_step() {
    Impl &p = *p_;
    if (p.mode == Impl::Mode::Idle) throw_usage("llm: next_step() without a reply in progress (call start() first)");
    ActiveScope active(p.bs.get());
    LlmStep st;
    st.n_embd = p.n_embd;
    auto take = [&](int32_t tok, const float *h) {
        ++st.n_tokens;
        st.text += piece(tok);
        if (!is_valid_text_token(tok)) return;
        st.token_ids.push_back(tok);
        st.hidden.insert(st.hidden.end(), h, h + p.n_embd);
    };
    auto finish = [&](const char *why) {
        st.is_last = true;
        st.stop = why;
        p.mode = Impl::Mode::Idle;
    };
    if (p.mode == Impl::Mode::Forced) {
        while (p.forced_next < p.forced_ids.size() && static_cast<int>(st.token_ids.size()) < cfg_.llm_step) {
            // a step's worth at a time (filtered tokens make a step consume more)
            if (p.forced_next >= p.forced_done) forced_compute(p.forced_next + static_cast<size_t>(cfg_.llm_step));
            take(p.forced_ids[p.forced_next], p.forced_hidden.data() + p.forced_next * static_cast<size_t>(p.n_embd));
            ++p.forced_next;
        }
        if (p.forced_next == p.forced_ids.size()) finish("text_end");
        return st;
    }
    while (static_cast<int>(st.token_ids.size()) < cfg_.llm_step) {
        if (cfg_.max_tokens > 0 && p.n_generated >= cfg_.max_tokens) { finish("max_tokens"); break; }
        if (p.pos >= p.n_ctx) { finish("context"); break; }
        auto t0 = Clock::now();
        const int32_t tok = p.sample();
        timings_.sample_ms += ms_since(t0);
        if (tok == p.tts_eos || llama_vocab_is_eog(p.vocab, tok)) { finish("eos"); break; }
        // Feeding the token yields its own hidden state and the next token's logits.
        t0 = Clock::now();
        p.decode(&tok, 1, p.pos, false, "reply");
        timings_.decode_ms += ms_since(t0);
        ++timings_.n_decoded;
        ++p.pos;
        ++p.n_generated;
        const float *h = p.embd(-1);
        if (!h) throw_runtime("llm: libllama returned no embeddings: " + take_llama_log());
        take(tok, h);
    }
    if (!st.is_last && ((cfg_.max_tokens > 0 && p.n_generated >= cfg_.max_tokens) || p.pos >= p.n_ctx))
        finish(p.pos >= p.n_ctx ? "context" : "max_tokens");
    return st;
}

void LlmEngine::generate(const std::function<bool(const LlmStep &)> &on_step) {
    while (!done()) {
        LlmStep s = next_step();
        if (!on_step(s)) break;
    }
}

}  // namespace rtf::lm
