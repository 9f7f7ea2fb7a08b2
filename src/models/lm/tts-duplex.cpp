#include "models/lm/tts-duplex.h"

#include <string>

#include "core/error.h"

namespace rtf::lm {

size_t merge_duplex_batch(std::span<const TtsInput> queued, int n_llm, DuplexBatch &out) {
    out = DuplexBatch{};
    size_t k = 0;
    int with_hidden = -1;  // unknown until a message with ids is seen
    while (k < queued.size()) {
        const TtsInput &m = queued[k++];
        out.llm_finish = out.llm_finish || m.llm_finish;
        out.end_of_turn = out.end_of_turn || m.is_last;
        if (!m.ids.empty()) {
            const int h = m.hidden.empty() ? 0 : 1;
            if (h && m.hidden.size() != m.ids.size() * static_cast<size_t>(n_llm))
                throw_usage("duplex TTS message " + std::to_string(k - 1) + ": " + std::to_string(m.hidden.size()) +
                            " hidden values for " + std::to_string(m.ids.size()) + " ids of width " + std::to_string(n_llm));
            if (with_hidden >= 0 && h != with_hidden)
                throw_usage("duplex TTS messages mix text-only and hidden-state input in one batch");
            with_hidden = h;
            out.ids.insert(out.ids.end(), m.ids.begin(), m.ids.end());
            out.hidden.insert(out.hidden.end(), m.hidden.begin(), m.hidden.end());
        }
        // The reference stops at the first end-of-turn message: the next turn's messages wait.
        if (m.is_last) break;
    }
    return k;
}

}  // namespace rtf::lm
