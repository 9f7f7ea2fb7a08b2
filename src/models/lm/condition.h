#pragma once
// LLM -> TTS conditioning (docs/minicpmo45.md §3.1, §3.3, §3.4): the valid-token filter and the
// condition rows c_i = E_text[y_i] + l2norm(W2 relu(W1 h_i + b1) + b2).
// Pure functions; thread-safe.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace rtf::lm {

class TtsWeights;

inline constexpr int32_t kAudioBosRow = 151687;  // audio_bos_token_id, a row of emb_text
inline constexpr int32_t kTextEosRow = 151692;   // text_eos_token_id, a row of emb_text
inline constexpr int32_t kSilenceCode = 4218;    // token2wav pad code (bookkeeping here)

// False for <think> </think> <|tts_eos|> <|listen|> <|speak|> <|turn_eos|> <|chunk_eos|>
// <|chunk_tts_eos|>, "\n\n" (271) and every id >= 150000 (docs/minicpmo45.md §3.1). Dropped tokens
// still enter the LLM's KV cache; they never reach the TTS.
bool is_valid_text_token(int32_t id);

// Keeps the valid (id, hidden row) pairs. `hidden` is ids.size() x n_llm row-major, or empty.
void filter_valid(std::span<const int32_t> ids, std::span<const float> hidden, int n_llm,
                  std::vector<int32_t> &out_ids, std::vector<float> &out_hidden);

// Builds condition rows for valid pairs, ids.size() x n_embd row-major. The projector runs
// as a ggml graph on the CPU backend with the reference's ops (mul_mat, add, relu, mul_mat,
// add, then x / sqrt(sum_rows(x^2) + 1e-8)), so the rows match the reference's bit for bit
// on the same CPU kernels. With an empty `hidden` (text-only input without LLM states) the
// projector term is left out: c_i = E_text[y_i].
// The reference normalises differently in its two TTS threads, and the last bits differ:
//  - Graph (simplex thread, tts_condition_graph_forward): the norm inside the ggml graph
//    (sum_rows, sqrt, div);
//  - HostSequential (duplex thread, normalize_l2_per_token): the projector graph, then per
//    token a sequential float32 sum of squares, sqrtf(sum + 1e-8), and x * (1 / norm).
// Thread-safety: one thread at a time per builder.
enum class ConditionNorm { Graph, HostSequential };

class ConditionBuilder {
public:
    ConditionBuilder(const TtsWeights &w, int n_threads, ConditionNorm norm = ConditionNorm::Graph);
    ~ConditionBuilder();
    ConditionBuilder(const ConditionBuilder &) = delete;
    ConditionBuilder &operator=(const ConditionBuilder &) = delete;

    void rows(std::span<const int32_t> ids, std::span<const float> hidden, std::vector<float> &out);

private:
    struct Impl;
    std::unique_ptr<Impl> p_;
};

}  // namespace rtf::lm
