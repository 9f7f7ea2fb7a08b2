#include "models/gen-audio/mtmd-common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <ggml.h>
#include <mtmd-helper.h>
#include <mtmd.h>

#include "core/error.h"
#include "models/gguf/mapped-gguf.h"

namespace rtf::gen_audio {

namespace {

void quiet_mtmd() {
    static const bool once = [] {
        const char *v = std::getenv("RTF_LLAMA_LOG");
        if (!(v && *v == '1'))
            mtmd_helper_log_set([](ggml_log_level level, const char *text, void *) {
                if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
            }, nullptr);
        return true;
    }();
    (void)once;
}

}  // namespace

mtmd_context *open_mmproj(const std::string &path, const llama_model *model, const lm::ModelPlacement &p,
                          const std::string &what) {
    quiet_mtmd();
    mtmd_context_params mp = mtmd_context_params_default();
    mp.use_gpu = p.device != "CPU";
    mp.print_timings = false;
    mp.n_threads = p.threads();
    mp.warmup = true;
    mtmd_context *m = mtmd_init_from_file(path.c_str(), model, mp);
    if (!m) throw_setup(what + " mmproj: libmtmd could not load " + path + " (run with RTF_LLAMA_LOG=1 for its log)");
    return m;
}

std::vector<float> token_rows(const std::string &path, int n_embd) {
    gguf::MappedGguf g(path);
    const gguf::MappedTensor t = g.require("token_embd.weight", {});
    if (t.ne[0] != n_embd) throw_setup(path + ": token_embd.weight rows are not n_embd wide");
    const auto *tr = ggml_get_type_traits(t.type);
    if (t.type != GGML_TYPE_F32 && !tr->to_float)
        throw_setup(path + ": token_embd.weight has a type ggml cannot convert to f32");
    std::vector<float> rows(static_cast<size_t>(t.ne[0] * t.ne[1]));
    if (t.type == GGML_TYPE_F32) std::memcpy(rows.data(), t.data, rows.size() * sizeof(float));
    else tr->to_float(t.data, rows.data(), static_cast<int64_t>(rows.size()));
    return rows;
}

int32_t find_token(const llama_vocab *v, const char *text) {
    const int32_t n = llama_vocab_n_tokens(v);
    for (int32_t i = n - 1; i >= 0; --i)
        if (std::strcmp(llama_vocab_get_text(v, i), text) == 0) return i;
    return -1;
}

std::vector<float> encode_speaker(mtmd_context *m, const std::string &file, int n_embd, const std::string &what) {
    if (!mtmd_support_audio(m)) throw_setup(what + ": the mmproj has no speaker encoder");
    mtmd_helper_bitmap_wrapper w = mtmd_helper_bitmap_init_from_file(m, file.c_str(), false, {});
    if (!w.bitmap) throw_usage("--speaker-file: " + file + " is not an audio file libmtmd can read (WAV, MP3, FLAC)");
    mtmd::bitmap_ptr bmp(w.bitmap);
    const std::string marker = mtmd_default_marker();
    mtmd_input_text txt{marker.c_str(), marker.size(), false, true};
    mtmd::input_chunks_ptr chunks(mtmd_input_chunks_init());
    const mtmd_bitmap *bp = bmp.get();
    if (mtmd_tokenize(m, chunks.get(), &txt, &bp, 1) != 0)
        throw_runtime(what + ": libmtmd could not tokenize the speaker audio " + file);
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks.get()); ++i) {
        const mtmd_input_chunk *c = mtmd_input_chunks_get(chunks.get(), i);
        if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_AUDIO) continue;
        if (mtmd_encode_chunk(m, c) != 0) throw_runtime(what + ": the speaker encoder failed on " + file);
        const float *e = mtmd_get_output_embd(m);
        return std::vector<float>(e, e + static_cast<size_t>(n_embd) * mtmd_input_chunk_get_n_tokens(c));
    }
    throw_usage("--speaker-file: " + file + " gave no audio to encode");
}

const std::vector<float> &pick_voice(const std::vector<std::pair<std::string, std::vector<float>>> &voices,
                                     const std::string &name, const std::string &what) {
    const std::string want = name.empty() ? "default" : name;
    std::string known;
    for (const auto &v : voices) {
        if (v.first == want) return v.second;
        known += (known.empty() ? "" : ", ") + v.first;
    }
    throw_usage(what + ": no voice '" + want + "' (loaded: " + known + ")");
}

void check_new_voice(const std::vector<std::pair<std::string, std::vector<float>>> &voices, const std::string &name,
                     const std::string &what) {
    if (name.empty() || name == "default") throw_usage(what + ": a voice needs a name other than 'default' (got '" + name + "')");
    for (const auto &v : voices)
        if (v.first == name) throw_usage(what + ": voice '" + name + "' is loaded twice");
}

int64_t tensor_ne0(const std::string &path, const std::string &tensor) {
    const gguf::MappedGguf g(path);
    return g.require(tensor, {}).ne[0];
}

}  // namespace rtf::gen_audio
