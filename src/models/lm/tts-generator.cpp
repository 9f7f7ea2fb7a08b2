#include "models/lm/tts-generator.h"

#include <limits>

#include <algorithm>

#include "core/elapsed.h"
#include "core/error.h"
#include "models/lm/condition.h"
#include "models/lm/tts-weights.h"

namespace rtf::lm {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

TtsGenerator::TtsGenerator(const TtsWeights &w, TtsForward &fwd, TtsGenOptions opt)
    : w_(w),
      fwd_(fwd),
      opt_(opt),
      rng_(opt.seed),
      cond_builder_(w, opt.condition_threads,
                    opt.mode == TtsMode::Duplex ? ConditionNorm::HostSequential : ConditionNorm::Graph) {
    if (opt_.chunk_codes < 1) throw_usage("TTS chunk size must be >= 1 code");
    set_lead_chunk_codes(opt_.lead_chunk_codes);
    if (opt_.max_codes_per_phase < 1) throw_usage("TTS max codes per phase must be >= 1");
    if (opt_.duplex_codes < 1) throw_usage("TTS duplex codes per call must be >= 1");
    row_.resize(static_cast<size_t>(w_.dims().n_embd));
    logits_.resize(static_cast<size_t>(w_.dims().n_codes));
}

void TtsGenerator::set_lead_chunk_codes(std::vector<int> sizes) {
    for (int n : sizes) {
        if (n < 1 || n > opt_.chunk_codes) {
            throw_usage("TTS lead chunk: " + std::to_string(n) + " codes; use 1 .. " + std::to_string(opt_.chunk_codes) +
                        " (the chunk size)");
        }
    }
    opt_.lead_chunk_codes = std::move(sizes);
}

void TtsGenerator::begin_utterance() {
    msg_ = -1;
    begin_turn();
}

void TtsGenerator::begin_turn() {
    fwd_.clear();
    pos_ = 0;
    history_.clear();
    buffer_.clear();
    chunks_in_turn_ = 0;
    last_phase1_eos_ = false;
    in_turn_ = true;
}

void TtsGenerator::decode_rows(const float *rows, int n, int pos0, int phase) {
    if (pos0 + n > fwd_.n_ctx())
        throw_runtime("TTS: the turn needs position " + std::to_string(pos0 + n) + " but the TTS context holds " +
                      std::to_string(fwd_.n_ctx()) + " (raise the TTS n_ctx)");
    if (obs_.on_prefill)
        obs_.on_prefill({msg_, phase, pos0, std::span<const float>(rows, static_cast<size_t>(n) * row_.size())});
    const auto t0 = Clock::now();
    fwd_.decode(rows, n, pos0);
    if (n > 1) {
        cnt_.prefill_ms += ms_since(t0);
        cnt_.n_prefill_rows += n;
        ++cnt_.n_prefill_calls;
    } else {
        cnt_.decode_ms += ms_since(t0);
        ++cnt_.n_decode;
    }
}

void TtsGenerator::feed_row(const float *row, int phase) {
    decode_rows(row, 1, pos_, phase);
    ++pos_;
}

int TtsGenerator::sample(int phase, int t, bool first_of_turn, std::span<const int32_t> pen, bool forbid_eos, bool duplex) {
    const auto t0 = Clock::now();
    std::span<const float> z = fwd_.hidden();
    std::span<const float> bl = opt_.host_logits ? std::span<const float>() : fwd_.logits();
    if (bl.size() == logits_.size()) {
        std::copy(bl.begin(), bl.end(), logits_.begin());
    } else {
        code_logits(z, w_.head(), w_.dims().n_codes, logits_);
    }
    const bool observe = static_cast<bool>(obs_.on_step);
    if (observe) raw_logits_.assign(logits_.begin(), logits_.end());
    if (forbid_eos && !duplex) {
        // Simplex with a minimum turn length (TtsGenOptions::min_codes_per_turn): mask EOS
        // (duplex masks it inside its own sampler).
        logits_[logits_.size() - 1] = -std::numeric_limits<float>::infinity();
    }
    float u = 0.0f;
    int code;
    kept_.idx.clear();
    kept_.p.clear();
    if (opt_.greedy) {
        // The reference's argmax of the raw logits: no draw, no penalty and, in duplex too, no
        // EOS mask (so a greedy non-final duplex call may stop early).
        code = argmax_code(logits_);
    } else {
        u = rng_.uniform();
        code = duplex ? sample_duplex(logits_, pen, t, forbid_eos, u, observe ? &kept_ : nullptr)
                      : sample_simplex(logits_, pen, first_of_turn, u);
    }
    ++cnt_.n_steps;
    cnt_.sample_ms += ms_since(t0);
    if (observe) {
        TtsStepEvent e{msg_, phase, t, pos_, code, u, z};
        e.logits = raw_logits_;
        e.eos_masked = duplex && forbid_eos && !opt_.greedy;
        e.n_hist = static_cast<int>(pen.size());
        e.kept = kept_.idx;
        e.kept_p = kept_.p;
        obs_.on_step(e);
    }
    return code;
}

void TtsGenerator::emit(int32_t code, std::vector<AudioChunk> &out) {
    ++cnt_.n_codes;
    history_.push_back(code);
    if (opt_.mode != TtsMode::Simplex) return;
    buffer_.push_back(code);
    const auto &lead = opt_.lead_chunk_codes;
    const int size = chunks_in_turn_ < static_cast<int64_t>(lead.size()) ? lead[static_cast<size_t>(chunks_in_turn_)]
                                                                          : opt_.chunk_codes;
    if (static_cast<int>(buffer_.size()) >= size) {
        const auto n = static_cast<std::ptrdiff_t>(size);
        push({std::vector<int32_t>(buffer_.begin(), buffer_.begin() + n), false}, out);
        buffer_.erase(buffer_.begin(), buffer_.begin() + n);
    }
}

void TtsGenerator::push(AudioChunk c, std::vector<AudioChunk> &out) {
    ++chunks_in_turn_;
    out.push_back(std::move(c));
    if (obs_.on_chunk) obs_.on_chunk(out.back());
}

void TtsGenerator::feed(const TtsInput &in, std::vector<AudioChunk> &out) {
    if (!in_turn_) begin_turn();
    ++msg_;
    if (opt_.mode == TtsMode::Simplex) {
        feed_simplex(in, out);
    } else {
        feed_duplex(in, out);
    }
}

void TtsGenerator::reprefill_for_first_code(int phase) {
    // Spec §2.5: the first code of a turn is sampled on a KV holding only this message's
    // condition at positions 0.. — a no-op when it already does (the turn's first message),
    // a restart when earlier messages of the turn emitted nothing.
    const int n_cond = static_cast<int>(cond_.size() / row_.size());
    if (pos_ == n_cond && !opt_.reference_noop_feeds) return;
    fwd_.clear();
    decode_rows(cond_.data(), n_cond, 0, phase);
    pos_ = n_cond;
}

int TtsGenerator::simplex_phase(int phase, std::vector<AudioChunk> &out) {
    const int eos = w_.dims().n_codes - 1;
    for (int t = 0; t < opt_.max_codes_per_phase; ++t) {
        if (phase == 1 && t == 0 && history_.empty()) reprefill_for_first_code(phase);
        const bool forbid_eos = static_cast<int64_t>(history_.size()) < opt_.min_codes_per_turn;
        const int code = sample(phase, t, history_.empty(), history_, forbid_eos, false);
        if (code == eos) {
            if (phase == 2 && opt_.reference_noop_feeds) {
                w_.code_row(code, row_.data());
                feed_row(row_.data(), phase);
            }
            return 1;
        }
        emit(code, out);
        w_.code_row(code, row_.data());
        feed_row(row_.data(), phase);
    }
    return 0;
}

void TtsGenerator::feed_simplex(const TtsInput &in, std::vector<AudioChunk> &out) {
    filter_valid(in.ids, in.hidden, w_.dims().n_llm, ids_, hid_);
    rng_.reseed(opt_.seed);
    if (!ids_.empty()) {
        cond_builder_.rows(ids_, hid_, cond_);
        w_.text_row(kAudioBosRow, row_.data());
        cond_.insert(cond_.end(), row_.begin(), row_.end());
        const int n = static_cast<int>(ids_.size()) + 1;
        decode_rows(cond_.data(), n, pos_, 1);
        pos_ += n;
        last_phase1_eos_ = simplex_phase(1, out) != 0;
    }
    if (!in.is_last) return;
    if (last_phase1_eos_) {
        // Spec §2.6 step 3: end of the text -> text_eos, audio BOS, then Phase 2.
        w_.text_row(kTextEosRow, row_.data());
        feed_row(row_.data(), 2);
        w_.text_row(kAudioBosRow, row_.data());
        feed_row(row_.data(), 2);
        simplex_phase(2, out);
    }
    if (!buffer_.empty()) push({buffer_, false}, out);
    buffer_.clear();
    push({{}, true}, out);
    in_turn_ = false;
}

void TtsGenerator::feed_duplex(const TtsInput &in, std::vector<AudioChunk> &out) {
    // One dequeued batch, as the reference's duplex TTS thread handles it (tts-duplex.h has
    // the rules and the merging of queued messages; docs/minicpmo45.md §3.3, §3.7).
    const bool eot = in.is_last;
    const auto append_text_row = [&](int32_t id) {
        w_.text_row(id, row_.data());
        cond_.insert(cond_.end(), row_.begin(), row_.end());
    };
    filter_valid(in.ids, in.hidden, w_.dims().n_llm, ids_, hid_);
    if (!ids_.empty()) {
        turn_eos_flushed_ = false;
        cond_builder_.rows(ids_, hid_, cond_);
        // [c.., BOS, (text_eos at end of turn), BOS]: the TTS thread appends one audio BOS,
        // the call appends text_eos and another (the double BOS is the reference's,
        // docs/minicpmo45.md §9.3).
        append_text_row(kAudioBosRow);
        if (eot) append_text_row(kTextEosRow);
        append_text_row(kAudioBosRow);
        const int n = duplex_call(eot, in.llm_finish, out);
        if (eot && n > 0) turn_eos_flushed_ = true;
        if (!in.llm_finish) return;  // end of turn without llm_finish: the reference keeps KV and position
        if (!eot) {
            push({{}, false, true}, out);  // the LLM's decode chunk ended: an extra empty chunk end
            return;
        }
        if (n == 0) push({{}, true, false}, out);  // nothing flushed yet: an empty final marker
        in_turn_ = false;
        return;
    }
    // No text. Without llm_finish the reference waits for more; a decode chunk that ends
    // without text only closes the chunk for Token2Wav.
    if (!in.llm_finish) return;
    if (!eot) {
        push({{}, false, true}, out);
        return;
    }
    // End of turn without text: flush the TTS with [text_eos, BOS] unless the turn's end was
    // already generated (an end-of-turn call with codes and no text since).
    if (!turn_eos_flushed_) {
        cond_.clear();
        append_text_row(kTextEosRow);
        append_text_row(kAudioBosRow);
        if (duplex_call(true, true, out) == 0) push({{}, true, false}, out);
        turn_eos_flushed_ = true;
    }
    in_turn_ = false;
}

int TtsGenerator::duplex_call(bool eot, bool llm_finish, std::vector<AudioChunk> &out) {
    const int eos = w_.dims().n_codes - 1;
    const int n = static_cast<int>(cond_.size() / row_.size());
    decode_rows(cond_.data(), n, pos_, 1);
    pos_ += n;
    rng_.reseed(opt_.seed);  // the reference creates the TTS sampler (and its RNG) per call
    call_.clear();
    // Non-final calls mask EOS for all their steps: exactly duplex_codes codes
    // (docs/minicpmo45.md §3.7).
    const int min_new = eot ? 0 : opt_.duplex_codes;
    for (int t = 0; t < opt_.duplex_codes; ++t) {
        if (t == 0 && history_.empty()) reprefill_for_first_code(1);
        const int code = sample(1, t, false, call_, t < min_new, true);
        if (code == eos) {
            // An end-of-turn call feeds its EOS. That row only matters when the turn goes on
            // (end of turn without llm_finish keeps the KV); otherwise the KV is cleared next.
            if (eot && (!llm_finish || opt_.reference_noop_feeds)) {
                w_.code_row(code, row_.data());
                feed_row(row_.data(), 1);
            }
            break;
        }
        call_.push_back(code);
        emit(code, out);
        w_.code_row(code, row_.data());
        feed_row(row_.data(), 1);
    }
    // All of a call's codes go to Token2Wav at once, when the call ends (the reference's
    // in-call push thresholds, 28 then 25, are never reached with <= 26 codes).
    push({call_, eot, !eot}, out);
    return static_cast<int>(call_.size());
}

}  // namespace rtf::lm
