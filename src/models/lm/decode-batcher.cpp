#include "models/lm/decode-batcher.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/elapsed.h"
#include "core/error.h"
#include "models/lm/llama-runtime.h"

namespace rtf::lm {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void BatcherConfig::validate() const {
    if (n_streams < 1 || n_streams > 64)
        throw_usage(name + " batcher: n_streams = " + std::to_string(n_streams) + ": use 1 .. 64");
    if (max_rows < 1) throw_usage(name + " batcher: max_rows = " + std::to_string(max_rows) + ": use 1 or more");
    if (!(gather_ms >= 0 && gather_ms <= 60000))
        throw_usage(name + " batcher: gather_ms = " + std::to_string(gather_ms) + ": use 0 .. 60000 ms");
}

nlohmann::json BatcherStats::to_json() const {
    nlohmann::json steps = nlohmann::json::array();
    for (size_t k = 0; k < step_count.size(); ++k) {
        if (step_count[k] == 0) continue;
        steps.push_back({{"streams", k + 1},
                         {"count", step_count[k]},
                         {"mean_ms", step_ms[k] / static_cast<double>(step_count[k])}});
    }
    return {{"decodes", n_decodes}, {"requests", n_requests}, {"rows", n_rows}, {"mean_batch", mean_batch()},
            {"steps", steps}};
}

struct DecodeBatcher::Pending {
    int seq = 0;
    const DecodeRequest *req = nullptr;
    DecodeResult *out = nullptr;
    enum class State { Queued, Running, Done } state = State::Queued;
    std::string error;
    Clock::time_point t;
};

DecodeBatcher::DecodeBatcher(BatcherConfig cfg, std::unique_ptr<BatchBackend> backend)
    : cfg_(std::move(cfg)), backend_(std::move(backend)) {
    cfg_.validate();
    if (!backend_) throw_usage(cfg_.name + " batcher: no backend");
    const auto n = static_cast<size_t>(cfg_.n_streams);
    joined_.assign(n, false);
    active_.assign(n, false);
    cancelled_.assign(n, false);
    stats_.step_count.assign(n, 0);
    stats_.step_ms.assign(n, 0.0);
    thread_ = std::thread([this] { worker(); });
}

DecodeBatcher::~DecodeBatcher() {
    {
        std::lock_guard<std::mutex> l(mu_);
        stop_ = true;
    }
    cv_work_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::unique_ptr<DecodeBatcher::Stream> DecodeBatcher::join() {
    std::lock_guard<std::mutex> l(mu_);
    for (int s = 0; s < cfg_.n_streams; ++s) {
        if (joined_[static_cast<size_t>(s)]) continue;
        joined_[static_cast<size_t>(s)] = true;
        cancelled_[static_cast<size_t>(s)] = false;
        return std::unique_ptr<Stream>(new Stream(shared_from_this(), s));
    }
    throw_usage(cfg_.name + " batcher: all " + std::to_string(cfg_.n_streams) +
                " sequences are taken (raise the batcher's n_streams)");
}

int DecodeBatcher::n_joined() const {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(std::count(joined_.begin(), joined_.end(), true));
}

BatcherStats DecodeBatcher::stats() const {
    std::lock_guard<std::mutex> l(mu_);
    return stats_;
}

void DecodeBatcher::seq_rm(int seq, int pos0) {
    std::lock_guard<std::mutex> c(ctx_mu_);
    backend_->seq_rm(seq, pos0);
}

void DecodeBatcher::leave(int seq) {
    // The owner thread is here, so this sequence has nothing pending; a decode of other
    // streams may be running: ctx_mu_ waits for it before the sequence is cleared.
    try {
        seq_rm(seq, 0);
    } catch (...) {
        // A destructor path: the sequence is cleared by the next user's seq_rm anyway.
    }
    {
        std::lock_guard<std::mutex> l(mu_);
        const auto s = static_cast<size_t>(seq);
        if (active_[s]) --n_active_;
        active_[s] = false;
        cancelled_[s] = false;
        joined_[s] = false;
    }
    cv_work_.notify_all();  // the merge rule may be met now
}

const DecodeResult &DecodeBatcher::submit(int seq, const DecodeRequest &req, DecodeResult &out) {
    if (req.n < 1 || req.n > cfg_.max_rows)
        throw_usage(cfg_.name + " batcher: a request of " + std::to_string(req.n) + " rows; use 1 .. " +
                    std::to_string(cfg_.max_rows) + " (split longer inputs)");
    if (!req.tokens == !req.embd) throw_usage(cfg_.name + " batcher: a request needs tokens or embedding rows (one of them)");
    Pending p;
    p.seq = seq;
    p.req = &req;
    p.out = &out;
    std::unique_lock<std::mutex> l(mu_);
    const auto s = static_cast<size_t>(seq);
    if (cancelled_[s]) throw_runtime(cfg_.name + ": decode cancelled");
    if (stop_) throw_runtime(cfg_.name + ": the decode batcher is stopping");
    p.t = Clock::now();
    pending_.push_back(&p);
    cv_work_.notify_all();
    cv_done_.wait(l, [&] { return p.state == Pending::State::Done || (p.state == Pending::State::Queued && cancelled_[s]); });
    if (p.state == Pending::State::Queued) {
        pending_.erase(std::find(pending_.begin(), pending_.end(), &p));
        throw_runtime(cfg_.name + ": decode cancelled");
    }
    if (!p.error.empty()) throw_runtime(p.error);
    return out;
}

void DecodeBatcher::worker() {
    std::unique_lock<std::mutex> l(mu_);
    // Every active stream has a request pending: nothing to wait for.
    const auto all_in = [&] {
        for (size_t s = 0; s < active_.size(); ++s) {
            if (!active_[s]) continue;
            const bool has = std::any_of(pending_.begin(), pending_.end(),
                                         [&](const Pending *p) { return p->seq == static_cast<int>(s); });
            if (!has) return false;
        }
        return true;
    };
    std::vector<Pending *> run;
    std::vector<BatchPart> parts;
    while (true) {
        cv_work_.wait(l, [&] { return stop_ || !pending_.empty(); });
        if (stop_) {
            for (auto *p : pending_) {
                p->error = cfg_.name + ": the decode batcher stopped before this decode ran";
                p->state = Pending::State::Done;
            }
            pending_.clear();
            cv_done_.notify_all();
            return;
        }
        // Waiting longer than a decode takes would cost more than it saves: the wait is
        // bounded by gather_ms and by the recent mean decode time.
        const double wait_ms = cfg_.bound_by_decode_time ? std::min(cfg_.gather_ms, mean_decode_ms_) : cfg_.gather_ms;
        const auto deadline = pending_.front()->t + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double, std::milli>(wait_ms));
        cv_work_.wait_until(l, deadline, [&] { return stop_ || pending_.empty() || all_in(); });
        if (stop_ || pending_.empty()) continue;
        // Oldest first, whole requests, up to max_rows rows (the first always fits: submit checked).
        run.clear();
        parts.clear();
        int rows = 0;
        while (!pending_.empty() && rows + pending_.front()->req->n <= cfg_.max_rows) {
            Pending *p = pending_.front();
            pending_.pop_front();
            p->state = Pending::State::Running;
            rows += p->req->n;
            run.push_back(p);
            parts.push_back({p->seq, p->req, p->out});
        }
        l.unlock();
        std::string error;
        const auto t0 = Clock::now();
        {
            std::lock_guard<std::mutex> c(ctx_mu_);
            try {
                for (const auto &pt : parts)
                    if (pt.req->rm_from >= 0) backend_->seq_rm(pt.seq, pt.req->rm_from);
                backend_->decode(parts);
            } catch (const std::exception &e) {
                error = e.what();
            } catch (...) {
                error = "unknown exception";
            }
        }
        const double ms = ms_since(t0);
        if (!error.empty() && error.rfind(cfg_.name + ":", 0) != 0)
            error = cfg_.name + ": decode of " + std::to_string(run.size()) + " stream(s) failed: " + error;
        l.lock();
        const bool step = std::all_of(parts.begin(), parts.end(), [](const BatchPart &p) { return p.req->n == 1; });
        mean_decode_ms_ = stats_.n_decodes == 0 ? ms : 0.8 * mean_decode_ms_ + 0.2 * ms;
        ++stats_.n_decodes;
        stats_.n_requests += static_cast<int64_t>(run.size());
        stats_.n_rows += rows;
        if (step && error.empty()) {
            ++stats_.step_count[run.size() - 1];
            stats_.step_ms[run.size() - 1] += ms;
        }
        for (auto *p : run) {
            p->error = error;
            p->out->batch_streams = static_cast<int>(run.size());
            p->state = Pending::State::Done;
        }
        cv_done_.notify_all();
    }
}

DecodeBatcher::Stream::~Stream() { b_->leave(seq_); }

const DecodeResult &DecodeBatcher::Stream::decode(const DecodeRequest &req) {
    const DecodeResult &r = b_->submit(seq_, req, result_);
    ++n_decodes_;
    sum_batch_ += r.batch_streams;
    return r;
}

void DecodeBatcher::Stream::seq_rm(int pos0) { b_->seq_rm(seq_, pos0); }

void DecodeBatcher::Stream::set_active(bool on) {
    {
        std::lock_guard<std::mutex> l(b_->mu_);
        const auto s = static_cast<size_t>(seq_);
        if (b_->active_[s] == on) return;
        b_->active_[s] = on;
        b_->n_active_ += on ? 1 : -1;
    }
    b_->cv_work_.notify_all();
}

void DecodeBatcher::Stream::cancel() {
    {
        std::lock_guard<std::mutex> l(b_->mu_);
        b_->cancelled_[static_cast<size_t>(seq_)] = true;
    }
    b_->cv_done_.notify_all();
}

void DecodeBatcher::Stream::resume() {
    std::lock_guard<std::mutex> l(b_->mu_);
    b_->cancelled_[static_cast<size_t>(seq_)] = false;
}

namespace {

// The libllama backend: one context with n_seq_max = n_streams and a unified KV cache, so
// any set of sequences goes into one ubatch (a split KV would need consecutive sequence ids
// in a ubatch; libllama's split_equal).
class LlamaBatchBackend final : public BatchBackend {
public:
    LlamaBatchBackend(const BatcherConfig &cfg, const std::string &path, const ModelPlacement &pl, bool embeddings,
                      bool embd_input)
        : name_(cfg.name), embd_input_(embd_input) {
        inst_ = load_llama(path, pl, embeddings, cfg.name, cfg.n_streams);
        n_embd_ = llama_model_n_embd(inst_.model.get());
        n_vocab_ = llama_vocab_n_tokens(llama_model_get_vocab(inst_.model.get()));
        n_ctx_seq_ = static_cast<int>(llama_n_ctx(inst_.ctx.get())) / cfg.n_streams;
        batch_ = llama_batch_init(cfg.max_rows, embd_input ? n_embd_ : 0, 1);
    }
    ~LlamaBatchBackend() override { llama_batch_free(batch_); }
    LlamaBatchBackend(const LlamaBatchBackend &) = delete;
    LlamaBatchBackend &operator=(const LlamaBatchBackend &) = delete;

    void decode(std::span<const BatchPart> parts) override {
        int i = 0;
        for (const auto &pt : parts) {
            const DecodeRequest &r = *pt.req;
            if (embd_input_ != (r.embd != nullptr))
                throw_usage(name_ + ": this context takes " + (embd_input_ ? "embedding rows" : "tokens") + ", not " +
                            (embd_input_ ? "tokens" : "embedding rows"));
            for (int k = 0; k < r.n; ++k, ++i) {
                if (embd_input_)
                    std::memcpy(batch_.embd + static_cast<size_t>(i) * static_cast<size_t>(n_embd_),
                                r.embd + static_cast<size_t>(k) * static_cast<size_t>(n_embd_),
                                static_cast<size_t>(n_embd_) * sizeof(float));
                else
                    batch_.token[i] = r.tokens[k];
                batch_.pos[i] = r.pos0 + k;
                batch_.n_seq_id[i] = 1;
                batch_.seq_id[i][0] = pt.seq;
                batch_.logits[i] = r.all_outputs || k == r.n - 1;
            }
        }
        batch_.n_tokens = i;
        const int rc = locked_decode(inst_, batch_);
        if (rc != 0)
            throw_runtime(name_ + ": llama_decode failed (code " + std::to_string(rc) + ") for a batch of " +
                          std::to_string(parts.size()) + " stream(s), " + std::to_string(i) + " rows: " + take_llama_log());
        i = 0;
        for (const auto &pt : parts) {
            const DecodeRequest &r = *pt.req;
            DecodeResult &o = *pt.out;
            o.n_out = r.all_outputs ? r.n : 1;
            o.n_embd = n_embd_;
            o.n_vocab = n_vocab_;
            o.embd.resize(r.want_embd ? static_cast<size_t>(o.n_out) * static_cast<size_t>(n_embd_) : 0);
            o.logits.resize(r.want_logits ? static_cast<size_t>(o.n_out) * static_cast<size_t>(n_vocab_) : 0);
            for (int j = 0; j < o.n_out; ++j) {
                const int idx = i + (r.all_outputs ? j : r.n - 1);
                if (r.want_embd) {
                    const float *e = llama_get_embeddings_ith(inst_.ctx.get(), idx);
                    if (!e) throw_runtime(name_ + ": libllama returned no embeddings: " + take_llama_log());
                    std::memcpy(o.embd.data() + static_cast<size_t>(j) * static_cast<size_t>(n_embd_), e,
                                static_cast<size_t>(n_embd_) * sizeof(float));
                }
                if (r.want_logits) {
                    const float *g = llama_get_logits_ith(inst_.ctx.get(), idx);
                    if (!g) throw_runtime(name_ + ": libllama returned no logits: " + take_llama_log());
                    std::memcpy(o.logits.data() + static_cast<size_t>(j) * static_cast<size_t>(n_vocab_), g,
                                static_cast<size_t>(n_vocab_) * sizeof(float));
                }
            }
            i += r.n;
        }
    }
    void seq_rm(int seq, int pos0) override {
        llama_memory_seq_rm(llama_get_memory(inst_.ctx.get()), seq, pos0, -1);
    }
    const llama_model *model() const override { return inst_.model.get(); }
    int n_ctx_seq() const override { return n_ctx_seq_; }

private:
    std::string name_;
    bool embd_input_;
    LlamaInstance inst_;
    llama_batch batch_{};
    int n_embd_ = 0, n_vocab_ = 0, n_ctx_seq_ = 0;
};

}  // namespace

std::shared_ptr<DecodeBatcher> make_llama_batcher(BatcherConfig cfg, const std::string &path,
                                                  const ModelPlacement &placement, bool embeddings, bool embd_input) {
    cfg.validate();
    cfg.max_rows = static_cast<int>(placement.n_batch);
    auto backend = std::make_unique<LlamaBatchBackend>(cfg, path, placement, embeddings, embd_input);
    return std::make_shared<DecodeBatcher>(cfg, std::move(backend));
}

}  // namespace rtf::lm
