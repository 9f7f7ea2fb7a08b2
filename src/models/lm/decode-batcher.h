#pragma once
// DecodeBatcher: one model context shared by several streams, their decode steps merged
// into one decode call (continuous batching). Each stream is one sequence of the context
// (its own KV, positions from 0); sampling, RNG and every other cache stay with the stream.
//
//   auto b = make_llama_batcher({"tts", 4}, derived_path, placement, /*embeddings=*/true);
//   auto s = b->join();                           // a sequence id; throws when all are taken
//   s->set_active(true);                          // counted by the merge rule below
//   const DecodeResult &r = s->decode(req);       // blocks until the merged decode ran
//   ... r.embd / r.logits (valid until this stream's next decode) ...
//   s.reset();                                    // leave: the sequence's KV is cleared
//
// The merge rule: a worker thread runs one decode for all pending requests as soon as every
// active stream has one pending, or `gather_ms` after the oldest pending one arrived,
// whichever is first (a lone active stream never waits); the wait is also bounded by the
// recent mean decode time, since waiting longer than a decode costs more than it saves. Requests are taken oldest first up
// to `max_rows` rows; a request is never split across decodes, so a stream's rows are
// computed in one pass as they would be alone. Streams join and leave between decodes: a
// stream leaving while a decode of other streams runs waits for it, then clears its sequence.
//
// Failure: a decode that fails throws rtf::Error(Runtime) "<name>: ..." in every stream whose
// request was in it (the others are untouched; their KV is what libllama left: the engines
// clear a sequence per utterance). cancel() makes a pending (not yet running) request of that
// stream throw "<name>: decode cancelled", and every later decode() until resume().
//
// Numerics: see docs/serve.md "Batching". A request's rows go through the same graph as alone,
// but ggml's CPU matrix product picks its kernel by the number of rows in the whole decode
// (llamafile's tinyBLAS from 2 rows, ggml_vec_dot for 1), so a one-row step merged with other
// streams sums in another order than alone: hidden rows differ in the last bits, sampled
// tokens/codes are equal unless a draw lands within that difference of a boundary.
//
// Thread-safety: join(), stats() and all Stream methods may be called from any thread; one
// thread drives a given Stream at a time (its decode() blocks).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/placement.h"

struct llama_model;

namespace rtf::lm {

// One stream's part of a merged decode.
struct DecodeRequest {
    const int32_t *tokens = nullptr;  // n token ids (token-input contexts), or
    const float *embd = nullptr;      // n x n_embd rows (embedding-input contexts)
    int n = 0;                        // rows, >= 1
    int pos0 = 0;                     // position of the first row in the stream's sequence
    int rm_from = -1;                 // drop the sequence's KV at positions >= rm_from first; -1 = keep
    bool all_outputs = false;         // outputs for every row; false = the last row only
    bool want_embd = false;           // copy the output rows' embeddings (final-norm hidden)
    bool want_logits = false;         // copy the output rows' logits
};

// What a stream gets back, owned by its Stream (valid until its next decode()).
struct DecodeResult {
    std::vector<float> embd;    // n_out x n_embd
    std::vector<float> logits;  // n_out x n_vocab
    int n_out = 0;
    int n_embd = 0, n_vocab = 0;
    int batch_streams = 0;  // requests merged into the decode that served this one
    const float *embd_row(int i) const { return embd.data() + static_cast<size_t>(i) * static_cast<size_t>(n_embd); }
    const float *logits_row(int i) const { return logits.data() + static_cast<size_t>(i) * static_cast<size_t>(n_vocab); }
};

// One request of a merged decode as the backend sees it.
struct BatchPart {
    int seq = 0;
    const DecodeRequest *req = nullptr;
    DecodeResult *out = nullptr;
};

// What the batcher drives: one context. The batcher calls it from one thread at a time.
class BatchBackend {
public:
    virtual ~BatchBackend() = default;
    // One decode of all parts (each part's rows contiguous, parts in order); fills every
    // part's `out`. Throws (any exception) when the decode fails.
    virtual void decode(std::span<const BatchPart> parts) = 0;
    // Drops sequence `seq`'s KV at positions >= pos0 (0 = all of it).
    virtual void seq_rm(int seq, int pos0) = 0;
    // The model behind the context (token-input engines tokenize with it); null for fakes.
    virtual const llama_model *model() const { return nullptr; }
    // Positions a sequence may hold (the per-stream context), 0 = unknown.
    virtual int n_ctx_seq() const { return 0; }
};

struct BatcherConfig {
    std::string name = "decode";  // the stage named in errors ("llm", "tts")
    int n_streams = 2;            // sequences = streams that may join at once
    int max_rows = 512;           // most rows in one decode (the context's n_batch)
    double gather_ms = 2.0;       // the longest a pending request waits for the other active streams
    bool bound_by_decode_time = true;  // also wait no longer than the recent mean decode (off: tests)
    void validate() const;        // throws rtf::Error(Usage) naming the field
};

struct BatcherStats {
    int64_t n_decodes = 0;     // decode calls
    int64_t n_requests = 0;    // requests served (sum of streams over decodes)
    int64_t n_rows = 0;
    // Step decodes only (every request one row: the memory-bound decode steps), by the number
    // of streams merged: index k-1 = k streams. Count and decode milliseconds.
    std::vector<int64_t> step_count;
    std::vector<double> step_ms;
    double mean_batch() const { return n_decodes ? static_cast<double>(n_requests) / static_cast<double>(n_decodes) : 0.0; }
    nlohmann::json to_json() const;
};

class DecodeBatcher : public std::enable_shared_from_this<DecodeBatcher> {
public:
    class Stream;
    DecodeBatcher(BatcherConfig cfg, std::unique_ptr<BatchBackend> backend);
    ~DecodeBatcher();  // stops the worker; streams hold a shared_ptr, so none is left
    DecodeBatcher(const DecodeBatcher &) = delete;
    DecodeBatcher &operator=(const DecodeBatcher &) = delete;

    // A free sequence (the lowest), or rtf::Error(Usage) when all n_streams are taken. The
    // stream starts inactive. The batcher must be owned by a shared_ptr.
    std::unique_ptr<Stream> join();
    BatcherStats stats() const;
    const BatcherConfig &config() const { return cfg_; }
    BatchBackend &backend() { return *backend_; }
    int n_joined() const;

private:
    struct Pending;
    void worker();
    void leave(int seq);
    void seq_rm(int seq, int pos0);
    const DecodeResult &submit(int seq, const DecodeRequest &req, DecodeResult &out);

    BatcherConfig cfg_;
    std::unique_ptr<BatchBackend> backend_;
    mutable std::mutex mu_;
    std::condition_variable cv_work_, cv_done_;
    std::mutex ctx_mu_;  // held while the backend runs (decode, seq_rm)
    std::deque<Pending *> pending_;
    std::vector<bool> joined_, active_, cancelled_;
    int n_active_ = 0;
    double mean_decode_ms_ = 1e9;  // recent decode time (bounds the gather wait)
    bool stop_ = false;
    BatcherStats stats_;
    std::thread thread_;
};

class DecodeBatcher::Stream {
public:
    ~Stream();  // leave: waits for a decode of other streams in progress, clears the sequence
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    int seq() const { return seq_; }
    // Runs `req` merged with the other streams' pending requests; blocks until done. Throws
    // rtf::Error(Runtime) naming the batcher when the decode failed or was cancelled, and
    // rtf::Error(Usage) for a malformed request.
    const DecodeResult &decode(const DecodeRequest &req);
    // Drops this sequence's KV at positions >= pos0 (0 = all), between decodes.
    void seq_rm(int pos0);
    // Whether the merge rule waits for this stream (an utterance in progress) or not.
    void set_active(bool on);
    void cancel();   // thread-safe; see the header's top
    void resume();
    // This stream's decodes and the streams merged in them (mean = sum / decodes), since join.
    int64_t n_decodes() const { return n_decodes_; }
    int64_t sum_batch() const { return sum_batch_; }
    DecodeBatcher &batcher() { return *b_; }

private:
    friend class DecodeBatcher;
    Stream(std::shared_ptr<DecodeBatcher> b, int seq) : b_(std::move(b)), seq_(seq) {}
    std::shared_ptr<DecodeBatcher> b_;
    int seq_;
    bool active_ = false;
    DecodeResult result_;
    int64_t n_decodes_ = 0, sum_batch_ = 0;
};

// Marks a stream active for the merge rule for the length of a scope; a null stream (an
// engine that is not batched) makes it a no-op. Engines hold one inside every call that
// decodes, so the batcher never waits for a stream that is between calls (handing a step
// on, waiting for another stage).
class ActiveScope {
public:
    explicit ActiveScope(DecodeBatcher::Stream *s) : s_(s) {
        if (s_) s_->set_active(true);
    }
    ~ActiveScope() {
        if (s_) s_->set_active(false);
    }
    ActiveScope(const ActiveScope &) = delete;
    ActiveScope &operator=(const ActiveScope &) = delete;

private:
    DecodeBatcher::Stream *s_;
};

// A batcher over a libllama context for `n_streams` sequences (unified KV of n_streams x
// placement.n_ctx cells; each stream still may use placement.n_ctx positions), embeddings
// output on when `embeddings`. `embd_input`: requests carry embedding rows, not tokens.
// Throws rtf::Error(Setup) like load_llama.
std::shared_ptr<DecodeBatcher> make_llama_batcher(BatcherConfig cfg, const std::string &path,
                                                  const ModelPlacement &placement, bool embeddings, bool embd_input);

}  // namespace rtf::lm
