#pragma once
// The duplex TTS stage of MiniCPM-o 4.5 (docs/minicpmo45.md §3.3, §3.7, §3.8 variant D, §7.1), as
// the reference runtime's duplex TTS thread runs it. The manual:
//
//   TtsConfig cfg;  cfg.model_path = ...;  cfg.mode = TtsMode::Duplex;
//   TtsEngine tts(cfg);
//   // Each time the TTS would wake up, hand it what the duplex LLM queued meanwhile:
//   for (auto &c : tts.feed_queued(queued_messages)) t2w.push(c);   // TtsInput each
//
// A duplex LLM message is a TtsInput: up to 10 valid (id, hidden row) pairs, `llm_finish` (the
// LLM's decode chunk ended: <|chunk_eos|>, <|listen|>, or its 26-token limit) and `is_last` =
// is_end_of_turn (<|turn_eos|>, <|tts_eos|>, EOS, or <|listen|> right after speaking).
//
// Batching. The TTS thread takes every queued message up to and including the first
// end-of-turn one and treats them as one batch (merge_duplex_batch): ids and hidden rows
// concatenated, flags or-ed. With the reference's capacity-1 queue a batch is usually one
// message; feed_queued() repeats until the queue is empty.
//
// Per batch (TtsGenerator in duplex mode):
//  - with valid text: one call. Condition [c_1..c_n, BOS, (text_eos if end of turn), BOS] at
//    the turn's running position; up to 26 codes sampled with variant D (code-sampler.h), the
//    RNG restarted per call, EOS masked for all 26 steps of a non-final call (exactly 26
//    codes) and allowed in an end-of-turn call (min_new 0; its EOS is fed to the KV). The
//    first code of a turn is sampled on a KV re-prefilled with only this call's condition.
//    Every non-EOS code is fed back, so positions continue across the calls of a turn.
//  - the call's codes go to Token2Wav as one chunk when it ends: is_chunk_end, or is_final at
//    end of turn;
//  - llm_finish without end of turn adds an empty is_chunk_end chunk (the decode chunk ended);
//  - end of turn with llm_finish ends the turn (KV, position, code history cleared at the next
//    call); if that call emitted no codes, an empty is_final chunk follows. End of turn
//    without llm_finish sends is_final but keeps the KV (as the reference does; the spec says
//    the state is cleared — not exercised by the golden run);
//  - without valid text: llm_finish alone -> an empty is_chunk_end chunk; with end of turn ->
//    a flush call on [text_eos, BOS] (codes with is_final), unless the turn's end was already
//    generated; no llm_finish -> nothing.
//
// Not modelled: the reference's text/UTF-8 bookkeeping (a message's text is assumed non-empty
// exactly when it has valid ids), its race-dependent reset (a batch with llm_finish arriving
// while the previous chunk's speek_done is still set), break/interrupt, and a batch whose ids
// are all special tokens (the duplex LLM drops those before sending; here it counts as
// text-less, the reference skips it and carries its llm_finish over to the next batch).
//
// Thread-safety: pure function; the engine is driven by one thread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "models/lm/tts-generator.h"

namespace rtf::lm {

// One batch the TTS thread dequeues, owning the merged rows.
struct DuplexBatch {
    std::vector<int32_t> ids;
    std::vector<float> hidden;  // ids.size() x n_llm, or empty (text-only messages)
    bool llm_finish = false;
    bool end_of_turn = false;
    TtsInput input() const { return {ids, hidden, end_of_turn, llm_finish}; }
};

// Merges queued.front() .. the first end-of-turn message (or the end) into `out` and returns
// how many messages it took (>= 1 unless `queued` is empty). Messages either all carry hidden
// rows (ids.size() x n_llm) or none do; a mix throws rtf::Error(Usage).
size_t merge_duplex_batch(std::span<const TtsInput> queued, int n_llm, DuplexBatch &out);

}  // namespace rtf::lm
