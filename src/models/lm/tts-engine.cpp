#include "models/lm/tts-engine.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/lm/decode-batcher.h"
#include "models/lm/derived-tts-model.h"
#include "models/lm/llama-runtime.h"
#include "models/lm/llm-engine.h"
#include "models/lm/tts-duplex.h"

namespace rtf::lm {

// The derived llama model behind TtsForward: embedding-row batches in, final-norm hidden
// (embeddings output) and head_code logits out.
class LlamaTtsForward final : public TtsForward {
public:
    LlamaTtsForward(const std::string &path, const ModelPlacement &pl) : inst_(load_llama(path, pl, true, "tts")) {
        n_embd_ = llama_model_n_embd(inst_.model.get());
        n_vocab_ = llama_vocab_n_tokens(llama_model_get_vocab(inst_.model.get()));
        n_batch_ = static_cast<int>(pl.n_batch);
        n_ctx_ = static_cast<int>(llama_n_ctx(inst_.ctx.get()));
        batch_ = llama_batch_init(n_batch_, n_embd_, 1);
    }
    ~LlamaTtsForward() override { llama_batch_free(batch_); }
    LlamaTtsForward(const LlamaTtsForward &) = delete;
    LlamaTtsForward &operator=(const LlamaTtsForward &) = delete;

    void clear() override {
        llama_memory_clear(llama_get_memory(inst_.ctx.get()), true);
        valid_ = false;
    }
    void decode(const float *rows, int n, int pos0) override {
        llama_memory_seq_rm(llama_get_memory(inst_.ctx.get()), 0, pos0, -1);
        valid_ = false;
        for (int start = 0; start < n; start += n_batch_) {
            const int m = std::min(n_batch_, n - start);
            batch_.n_tokens = m;
            std::copy(rows + static_cast<size_t>(start) * static_cast<size_t>(n_embd_),
                      rows + static_cast<size_t>(start + m) * static_cast<size_t>(n_embd_), batch_.embd);
            for (int i = 0; i < m; ++i) {
                batch_.pos[i] = pos0 + start + i;
                batch_.n_seq_id[i] = 1;
                batch_.seq_id[i][0] = 0;
                batch_.logits[i] = (start + i == n - 1);
            }
            const int rc = locked_decode(inst_, batch_);
            if (rc != 0)
                throw_runtime("tts: llama_decode failed (code " + std::to_string(rc) + ") for " + std::to_string(m) +
                              " rows at position " + std::to_string(pos0 + start) + ": " + take_llama_log());
        }
        valid_ = true;
    }
    std::span<const float> hidden() override {
        if (!valid_) throw_runtime("tts: no decoded row to read the hidden state of");
        const float *e = llama_get_embeddings_ith(inst_.ctx.get(), -1);
        if (!e) throw_runtime("tts: libllama returned no embeddings: " + take_llama_log());
        return {e, static_cast<size_t>(n_embd_)};
    }
    std::span<const float> logits() override {
        if (!valid_) return {};
        const float *l = llama_get_logits_ith(inst_.ctx.get(), -1);
        return l ? std::span<const float>(l, static_cast<size_t>(n_vocab_)) : std::span<const float>();
    }
    int n_ctx() const override { return n_ctx_; }
    int n_embd() const { return n_embd_; }
    int64_t device_io_bytes() const override {
        return inst_.devices.empty() ? -1 : static_cast<int64_t>(inst_.device_io_bytes);
    }

private:
    LlamaInstance inst_;
    llama_batch batch_{};
    int n_embd_ = 0, n_vocab_ = 0, n_batch_ = 0, n_ctx_ = 0;
    bool valid_ = false;
};

// The same transformer as one sequence of a shared context (decode-batcher.h): the rows of
// each decode are merged with other streams' pending decodes; hidden and logits of the last
// row are copied back.
class BatchedTtsForward final : public TtsForward {
public:
    explicit BatchedTtsForward(std::shared_ptr<DecodeBatcher> b) : b_(std::move(b)), s_(b_->join()) {
        n_ctx_ = b_->backend().n_ctx_seq();
    }
    void clear() override {
        s_->seq_rm(0);
        res_ = nullptr;
    }
    void decode(const float *rows, int n, int pos0) override {
        res_ = nullptr;
        const int max = b_->config().max_rows;
        for (int start = 0; start < n; start += max) {
            const int m = std::min(max, n - start);
            DecodeRequest r;
            r.embd = rows + static_cast<size_t>(start) * static_cast<size_t>(n_embd_);
            r.n = m;
            r.pos0 = pos0 + start;
            r.rm_from = start == 0 ? pos0 : -1;  // as alone: KV entries at >= pos0 dropped first
            r.want_embd = r.want_logits = start + m == n;
            res_ = &s_->decode(r);
        }
    }
    std::span<const float> hidden() override {
        if (!res_ || res_->embd.empty()) throw_runtime("tts: no decoded row to read the hidden state of");
        return {res_->embd_row(res_->n_out - 1), static_cast<size_t>(res_->n_embd)};
    }
    std::span<const float> logits() override {
        if (!res_ || res_->logits.empty()) return {};
        return {res_->logits_row(res_->n_out - 1), static_cast<size_t>(res_->n_vocab)};
    }
    int n_ctx() const override { return n_ctx_; }
    void set_n_embd(int n) { n_embd_ = n; }
    DecodeBatcher::Stream &stream() { return *s_; }

private:
    std::shared_ptr<DecodeBatcher> b_;
    std::unique_ptr<DecodeBatcher::Stream> s_;
    const DecodeResult *res_ = nullptr;
    int n_ctx_ = 0, n_embd_ = 0;
};

void TtsConfig::validate() const {
    if (model_path.empty()) throw_usage("tts.model_path is empty: give the TTS GGUF (…/tts/MiniCPM-o-4_5-tts-F16.gguf)");
    placement.validate("tts");
    if (chunk_codes < 1 || chunk_codes > 1000) throw_usage("tts.chunk_codes = " + std::to_string(chunk_codes) + ": use 1 .. 1000");
    if (max_codes_per_phase < 1 || max_codes_per_phase > 100000)
        throw_usage("tts.max_codes_per_phase = " + std::to_string(max_codes_per_phase) + ": use 1 .. 100000");
    if (duplex_codes < 1 || duplex_codes > 27)
        throw_usage("tts.duplex_codes = " + std::to_string(duplex_codes) +
                    ": use 1 .. 27 (the reference: 26; from 28 on it would push codes mid-call)");
}

nlohmann::json TtsConfig::to_json() const {
    return {{"model_path", model_path},
            {"projector_path", projector_path},
            {"cache_dir", cache_dir},
            {"placement", placement.to_json()},
            {"mode", mode == TtsMode::Simplex ? "simplex" : "duplex"},
            {"seed", seed},
            {"greedy", greedy},
            {"max_codes_per_phase", max_codes_per_phase},
            {"min_codes_per_turn", min_codes_per_turn},
            {"chunk_codes", chunk_codes},
            {"duplex_codes", duplex_codes},
            {"host_logits", host_logits},
            {"reference_noop_feeds", reference_noop_feeds}};
}

nlohmann::json TtsTimings::to_json() const {
    return {{"load_ms", load_ms},           {"prefill_ms", prefill_ms}, {"n_prefill_rows", n_prefill_rows},
            {"n_prefill_calls", n_prefill_calls}, {"decode_ms", decode_ms},   {"n_decode", n_decode},
            {"sample_ms", sample_ms},       {"n_steps", n_steps},       {"n_codes", n_codes},
            {"batched", batched},           {"mean_batch", mean_batch}};
}

TtsEngine::TtsEngine(const TtsConfig &cfg, const TtsBatcherSource &batcher) : cfg_(cfg) {
    const auto t0 = std::chrono::steady_clock::now();
    cfg_.validate();
    weights_ = std::make_unique<TtsWeights>(cfg_.model_path, cfg_.projector_path);
    const std::string cache = cfg_.cache_dir.empty() ? default_tts_cache_dir(cfg_.model_path) : cfg_.cache_dir;
    derived_path_ = ensure_derived_tts_model(*weights_, cache);
    int width = 0;
    if (batcher) {
        auto b = batcher(derived_path_);
        if (!b || !b->backend().model()) throw_setup("tts: no libllama decode batcher for " + derived_path_);
        width = llama_model_n_embd(b->backend().model());
        auto f = std::make_unique<BatchedTtsForward>(std::move(b));
        f->set_n_embd(width);
        bs_ = &f->stream();
        fwd_ = std::move(f);
    } else {
        auto f = std::make_unique<LlamaTtsForward>(derived_path_, cfg_.placement);
        width = f->n_embd();
        fwd_ = std::move(f);
    }
    if (width != dims().n_embd)
        throw_setup(derived_path_ + ": transformer width " + std::to_string(width) + " != emb_code width " +
                    std::to_string(dims().n_embd));
    TtsGenOptions o;
    o.mode = cfg_.mode;
    o.seed = cfg_.seed;
    o.greedy = cfg_.greedy;
    o.max_codes_per_phase = cfg_.max_codes_per_phase;
    o.min_codes_per_turn = cfg_.min_codes_per_turn;
    o.chunk_codes = cfg_.chunk_codes;
    o.duplex_codes = cfg_.duplex_codes;
    o.host_logits = cfg_.host_logits;
    o.reference_noop_feeds = cfg_.reference_noop_feeds;
    o.condition_threads = cfg_.placement.threads_batch();
    gen_ = std::make_unique<TtsGenerator>(*weights_, *fwd_, o);
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

TtsEngine::~TtsEngine() = default;

void TtsEngine::begin_utterance() {
    gen_->begin_utterance();
    mark_batch();
}

void TtsEngine::interrupt_decode() {
    if (bs_) bs_->cancel();
}

void TtsEngine::resume_decode() {
    if (bs_) bs_->resume();
}

void TtsEngine::mark_batch() {
    if (!bs_) return;
    batch_mark_n_ = bs_->n_decodes();
    batch_mark_sum_ = bs_->sum_batch();
}

std::vector<AudioChunk> TtsEngine::feed(const TtsInput &in) {
    ActiveScope active(bs_);
    if (!gen_->in_turn()) mark_batch();
    std::vector<AudioChunk> out;
    gen_->feed(in, out);
    return out;
}

std::vector<AudioChunk> TtsEngine::feed(const LlmStep &step) {
    if (!step.hidden.empty() && step.n_embd != dims().n_llm)
        throw_usage("LLM hidden size " + std::to_string(step.n_embd) + " does not match the TTS projector input " +
                    std::to_string(dims().n_llm) + " (LLM and TTS files of different models?)");
    // Duplex: a reply's last step ends both the decode chunk and the turn.
    return feed(TtsInput{step.token_ids, step.hidden, step.is_last, step.is_last});
}

std::vector<AudioChunk> TtsEngine::feed_queued(std::span<const TtsInput> queued) {
    if (cfg_.mode != TtsMode::Duplex) throw_usage("TtsEngine::feed_queued is the duplex input; this engine is simplex");
    ActiveScope active(bs_);
    std::vector<AudioChunk> out;
    DuplexBatch batch;
    while (!queued.empty()) {
        const size_t k = merge_duplex_batch(queued, dims().n_llm, batch);
        gen_->feed(batch.input(), out);
        queued = queued.subspan(k);
    }
    return out;
}

std::vector<AudioChunk> TtsEngine::finish() {
    if (!gen_->in_turn()) return {};
    return feed(TtsInput{{}, {}, true, true});
}

TtsTimings TtsEngine::timings() const {
    const auto &c = gen_->counters();
    TtsTimings t;
    t.n_prefill_rows = c.n_prefill_rows;
    t.n_prefill_calls = c.n_prefill_calls;
    t.n_decode = c.n_decode;
    t.n_codes = c.n_codes;
    t.n_steps = c.n_steps;
    t.prefill_ms = c.prefill_ms;
    t.decode_ms = c.decode_ms;
    t.sample_ms = c.sample_ms;
    t.load_ms = load_ms_;
    t.batched = bs_ != nullptr;
    if (bs_) {
        const int64_t n = bs_->n_decodes() - batch_mark_n_;
        t.mean_batch = n > 0 ? static_cast<double>(bs_->sum_batch() - batch_mark_sum_) / static_cast<double>(n) : 0.0;
    }
    return t;
}

void TtsEngine::set_observer(TtsObserver obs) { gen_->set_observer(std::move(obs)); }

void TtsEngine::set_lead_chunk_codes(std::vector<int> sizes) { gen_->set_lead_chunk_codes(std::move(sizes)); }

void TtsEngine::warm() {
    // A throw-away batch (a condition's size) and one single-row decode, on zero rows: the
    // first utterance then pays no first-touch costs. The next turn clears the KV cache.
    const int n = std::min(16, std::max(1, fwd_->n_ctx() - 1));
    std::vector<float> rows(static_cast<size_t>(n) * static_cast<size_t>(dims().n_embd), 0.0f);
    fwd_->decode(rows.data(), n, 0);
    fwd_->decode(rows.data(), 1, n);
    fwd_->clear();
}

TtsForward &TtsEngine::forward() { return *fwd_; }

int64_t TtsEngine::device_io_bytes() const { return fwd_->device_io_bytes(); }

}  // namespace rtf::lm
