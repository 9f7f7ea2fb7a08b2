#include "predict/model-floors.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/gguf/gguf-file.h"
#include "models/gguf/layout.h"
#include "models/gguf/minicpmo45-layout.h"

namespace rtf::predict {

namespace fs = std::filesystem;
using gguf::FileLayout;
using gguf::GgufFile;
using gguf::TensorInfo;

void FloorAssumptions::validate() const {
    if (!(text_tokens_per_s > 0)) throw_usage("--text-tokens-per-s: must be > 0");
    if (!(audio_tokens_per_s > 0)) throw_usage("--audio-tokens-per-s: must be > 0");
    if (llm_kv_tokens < 0) throw_usage("--llm-kv-tokens: must be >= 0");
    if (tts_kv_tokens < 0) throw_usage("--tts-kv-tokens: must be >= 0");
}

nlohmann::json FloorAssumptions::to_json() const {
    return {{"text_tokens_per_s", text_tokens_per_s}, {"audio_tokens_per_s", audio_tokens_per_s},
            {"llm_kv_tokens", llm_kv_tokens},         {"tts_kv_tokens", tts_kv_tokens},
            {"t2w_window_tokens", t2w_window_tokens}, {"t2w_mel_frames_vocoder", t2w_mel_frames_vocoder}};
}

namespace {

// What the costing reads of one file — tensors (name, shape, type, bytes) and integer /
// string keys — from either a GGUF header or a layout table, so that a kit too large to
// write here (full scale: a 16 GiB LLM) is costed from the same shapes its files would have.
class CostFile {
public:
    explicit CostFile(std::unique_ptr<GgufFile> f) : gguf_(std::move(f)), path_(gguf_->path()), tensors_(gguf_->tensors()) {}
    CostFile(const FileLayout &l, const std::string &origin) : layout_(l), path_(origin + ":" + l.file_name) {
        for (const auto &s : l.tensors) {
            TensorInfo t;
            t.name = s.name;
            t.type = s.type;
            t.ne = s.ne;
            t.n_dims = gguf::shape_dims(s.ne);
            t.nbytes = gguf::tensor_nbytes(s.type, s.ne);
            tensors_.push_back(std::move(t));
        }
    }
    const std::string &path() const { return path_; }
    const std::vector<TensorInfo> &tensors() const { return tensors_; }
    const TensorInfo *find_tensor(const std::string &name) const {
        for (const auto &t : tensors_)
            if (t.name == name) return &t;
        return nullptr;
    }
    std::optional<int64_t> find_int(const std::string &key) const {
        if (gguf_) return gguf_->find_int(key);
        for (const auto &kv : layout_.kvs) {
            if (kv.key != key) continue;
            if (auto *u = std::get_if<uint32_t>(&kv.value)) return *u;
            if (auto *i = std::get_if<int32_t>(&kv.value)) return *i;
            if (auto *u = std::get_if<uint64_t>(&kv.value)) return static_cast<int64_t>(*u);
        }
        return std::nullopt;
    }
    int64_t get_int(const std::string &key) const {
        if (gguf_) return gguf_->get_int(key);
        auto v = find_int(key);
        if (!v) throw_usage(path_ + ": metadata key '" + key + "' missing from the layout table");
        return *v;
    }
    std::optional<std::string> find_string(const std::string &key) const {
        if (gguf_) return gguf_->find_string(key);
        for (const auto &kv : layout_.kvs)
            if (kv.key == key)
                if (auto *s = std::get_if<std::string>(&kv.value)) return *s;
        return std::nullopt;
    }

private:
    std::unique_ptr<GgufFile> gguf_;
    FileLayout layout_;
    std::string path_;
    std::vector<TensorInfo> tensors_;
};

// Device kernels per weight-matrix use: the product plus about two more (its norm, activation
// or residual add). llama.cpp's Qwen3 layer has 7 matrices and ~22 graph nodes that launch work;
// an ESTIMATE used only for a device's per-kernel launch floor (rtf predict).
constexpr double kKernelsPerMatrix = 3.0;

double nelem(const TensorInfo &t) {
    return static_cast<double>(t.ne[0]) * static_cast<double>(t.ne[1]) * static_cast<double>(t.ne[2]) *
           static_cast<double>(t.ne[3]);
}
bool starts(const std::string &s, const char *p) { return s.rfind(p, 0) == 0; }
bool contains(const std::string &s, const char *p) { return s.find(p) != std::string::npos; }
bool is_matrix(const TensorInfo &t) { return t.n_dims >= 2 && contains(t.name, "weight"); }
double total_bytes(const CostFile &f) {
    double b = 0;
    for (const auto &t : f.tensors()) b += static_cast<double>(t.nbytes);
    return b;
}

// Row bytes of a [ne0, ne1] tensor: one row of ne0 elements.
double row_bytes(const TensorInfo &t) { return t.ne[1] > 0 ? static_cast<double>(t.nbytes) / nelem(t) * t.ne[0] : 0; }

int64_t key_or(const CostFile &f, const std::string &k, int64_t def) {
    auto v = f.find_int(k);
    return v ? *v : def;
}

StageCost llm_cost(const CostFile &f, const std::string &arch, const FloorAssumptions &a) {
    StageCost c;
    c.stage = "llm";
    c.files = {f.path()};
    c.unit = "text token";
    c.units_per_audio_s = a.text_tokens_per_s;
    double bytes = 0, wflops = 0;
    std::map<std::string, int> types;
    for (const auto &t : f.tensors()) {
        if (t.name == "token_embd.weight") {
            bytes += row_bytes(t);
            continue;
        }
        bytes += static_cast<double>(t.nbytes);
        if (is_matrix(t)) {
            wflops += 2 * nelem(t);
            types[ggml_type_name(t.type)] += 1;
        }
    }
    const int64_t n_layer = f.get_int(arch + ".block_count");
    const int64_t n_embd = f.get_int(arch + ".embedding_length");
    const int64_t n_head = key_or(f, arch + ".attention.head_count", 1);
    const int64_t n_kv = key_or(f, arch + ".attention.head_count_kv", n_head);
    const int64_t head_dim = key_or(f, arch + ".attention.key_length", n_embd / std::max<int64_t>(1, n_head));
    double kv_bytes = 2.0 * n_layer * n_kv * head_dim * a.llm_kv_tokens * 2.0;  // K and V, F16
    double attn_flops = 4.0 * n_layer * n_head * head_dim * a.llm_kv_tokens;
    c.bytes_per_unit = bytes + kv_bytes;
    c.flops_per_unit = wflops + attn_flops;
    int n_matrices = 0;
    for (const auto &[t, n] : types) n_matrices += n;
    c.parts = {{"weight_bytes", bytes},     {"kv_bytes", kv_bytes},
               {"weight_flops", wflops},    {"attention_flops", attn_flops},
               {"kernels", kKernelsPerMatrix * n_matrices},
               {"hidden_row_bytes", 4.0 * static_cast<double>(n_embd)}};
    auto most = std::max_element(types.begin(), types.end(), [](auto &x, auto &y) { return x.second < y.second; });
    c.weight_type = most == types.end() ? "f32" : most->first;
    c.notes.push_back("architecture " + arch + ", " + std::to_string(n_layer) + " layers, KV costed at position " +
                      std::to_string(a.llm_kv_tokens) + " (F16)");
    return c;
}

StageCost tts_cost(const CostFile &f, const CostFile *projector, const FloorAssumptions &a) {
    StageCost c;
    c.stage = "tts";
    c.files = {f.path()};
    c.unit = "audio token";
    c.units_per_audio_s = a.audio_tokens_per_s;
    double bytes = 0, flops = 0, kernels = 0;
    std::map<std::string, int> types;
    for (const auto &t : f.tensors()) {
        if (starts(t.name, "blk.") || t.name == "output_norm.weight" || t.name == "head_code.0.weight") {
            bytes += static_cast<double>(t.nbytes);
            if (is_matrix(t)) {
                flops += 2 * nelem(t);
                kernels += kKernelsPerMatrix;
                if (starts(t.name, "blk.")) types[ggml_type_name(t.type)] += 1;
            }
        } else if (t.name == "emb_code.0.weight") {
            bytes += row_bytes(t);
        }
    }
    const int64_t n_layer = key_or(f, "llama.block_count", 0);
    const int64_t n_embd = key_or(f, "llama.embedding_length", 0);
    const int64_t n_head = key_or(f, "llama.attention.head_count", 1);
    const int64_t n_kv = key_or(f, "llama.attention.head_count_kv", n_head);
    const int64_t head_dim = n_embd / std::max<int64_t>(1, n_head);
    double kv_bytes = 2.0 * n_layer * n_kv * head_dim * a.tts_kv_tokens * 2.0;
    double attn = 4.0 * n_layer * n_head * head_dim * a.tts_kv_tokens;
    // Projector: once per 10-text-token message (docs/minicpmo45.md §3.2), spread over the audio
    // tokens.
    double proj_bytes = 0;
    if (projector) proj_bytes = total_bytes(*projector) * (a.text_tokens_per_s / 10.0) / a.audio_tokens_per_s;
    c.bytes_per_unit = bytes + kv_bytes + proj_bytes;
    c.flops_per_unit = flops + attn;
    c.parts = {{"weight_bytes", bytes}, {"kv_bytes", kv_bytes}, {"projector_bytes", proj_bytes},
               {"weight_flops", flops}, {"attention_flops", attn}, {"kernels", kernels}};
    auto most = std::max_element(types.begin(), types.end(), [](auto &x, auto &y) { return x.second < y.second; });
    c.weight_type = most == types.end() ? "f32" : most->first;
    if (projector) c.files.push_back(projector->path());
    c.notes.push_back(std::to_string(n_layer) + " layers; head_code read whole per token; KV at position " +
                      std::to_string(a.tts_kv_tokens));
    return c;
}

// Per-layer attention MACs per frame: QK^T and AV over `keys` keys of width d.
double attn_macs(double keys, double d) { return 2.0 * keys * d; }

StageCost t2w_cost(const std::map<std::string, std::unique_ptr<CostFile>> &files, const FloorAssumptions &a,
                   std::vector<std::string> &notes) {
    StageCost c;
    c.stage = "t2w";
    c.unit = "window";
    c.units_per_audio_s = 1.0;  // one 1-s window (25 tokens) per second of audio
    c.weight_type = "f32";
    const double tokens = a.t2w_window_tokens, frames = 2.0 * tokens;
    double bytes = 0, voc_bytes = 0;  // voc_bytes: hifigan2's share (the rest is token2mel's)
    for (const auto &[name, f] : files) {
        if (name == "prompt_cache") continue;
        c.files.push_back(f->path());
        bytes += total_bytes(*f);
        if (name == "hifigan2") voc_bytes += total_bytes(*f);
    }
    // Prompt-cache lengths (attention keys) and steps.
    double l_conf = 0, l_est = 0, steps = 5;
    if (auto it = files.find("prompt_cache"); it != files.end()) {
        const auto &pc = *it->second;
        c.files.push_back(pc.path());
        if (auto *t = pc.find_tensor("prompt_cache.conformer_att_cache")) l_conf = static_cast<double>(t->ne[1]);
        if (auto *t = pc.find_tensor("prompt_cache.estimator_att_cache")) l_est = static_cast<double>(t->ne[1]);
        if (auto v = pc.find_int("mtmd.prompt_cache.n_timesteps")) steps = static_cast<double>(*v);
        // The estimator cache's attention/conv caches are read per window too.
        for (const auto &t : pc.tensors()) bytes += static_cast<double>(t.nbytes);
    } else {
        notes.push_back("t2w: no prompt_cache.gguf: attention over the prompt not counted, 5 flow steps assumed");
    }
    double enc = 0, dit = 0, hift = 0;
    double enc_k = 0, dit_k = 0, hift_k = 0;  // kernels per window (kKernelsPerMatrix per matrix use)
    if (auto it = files.find("encoder"); it != files.end()) {
        double d = 0;
        int n_tok_layers = 0, n_mel_layers = 0;
        for (const auto &t : it->second->tensors()) {
            if (!is_matrix(t)) continue;
            bool mel_rate = starts(t.name, "up_") || starts(t.name, "after_norm");
            enc += nelem(t) * (mel_rate ? frames : tokens);
            enc_k += kKernelsPerMatrix;
            if (contains(t.name, "self_attn.linear_q.weight")) {
                d = static_cast<double>(t.ne[0]);
                (mel_rate ? n_mel_layers : n_tok_layers) += 1;
            }
        }
        enc += n_tok_layers * tokens * attn_macs(l_conf + tokens, d) + n_mel_layers * frames * attn_macs(l_conf + frames, d);
    }
    if (auto it = files.find("flow_extra"); it != files.end()) {
        if (auto *t = it->second->find_tensor("encoder_proj.weight")) enc += nelem(*t) * frames;
    }
    if (auto it = files.find("flow_matching"); it != files.end()) {
        double per_frame = 0, per_step = 0, d = 0;
        int n_blocks = 0;
        for (const auto &t : it->second->tensors()) {
            if (!is_matrix(t)) continue;
            if (contains(t.name, "adaLN_modulation") || contains(t.name, "t_embedder")) per_step += nelem(t);
            else per_frame += nelem(t);
            dit_k += kKernelsPerMatrix;
            if (contains(t.name, "attn.to_q.weight")) {
                d = static_cast<double>(t.ne[0]);
                ++n_blocks;
            }
        }
        per_frame += n_blocks * attn_macs(l_est + frames, d);
        dit = (per_frame * frames + per_step) * steps * 2.0;  // x 2: CFG branches
        dit_k *= steps;  // the two CFG branches can share a batched kernel: counted once (a bound)
    }
    if (auto it = files.find("hifigan2"); it != files.end()) {
        const double T = a.t2w_mel_frames_vocoder;
        // Output length of each stage s (after ups.s): T x 8, x 5, x 3 (docs/minicpmo45.md §2.8).
        const double rate[3] = {8 * T, 40 * T, 120 * T};
        for (const auto &t : it->second->tensors()) {
            if (!is_matrix(t) || t.n_dims < 2) continue;
            const std::string &n = t.name;
            double len = T;
            auto stage_of = [&](const char *prefix) {
                return static_cast<int>(std::strtol(n.c_str() + std::string(prefix).size(), nullptr, 10));
            };
            if (starts(n, "ups.")) {
                int s = stage_of("ups.");
                len = s == 0 ? T : rate[std::clamp(s - 1, 0, 2)];  // transposed conv: input length
            } else if (starts(n, "source_downs.")) {
                len = rate[std::clamp(stage_of("source_downs."), 0, 2)];
            } else if (starts(n, "source_resblocks.")) {
                len = rate[std::clamp(stage_of("source_resblocks."), 0, 2)];
            } else if (starts(n, "resblocks.")) {
                len = rate[std::clamp(stage_of("resblocks.") / 3, 0, 2)];
            } else if (starts(n, "conv_post")) {
                len = rate[2];
            }
            hift += nelem(t) * len;
            hift_k += kKernelsPerMatrix;
        }
    }
    c.bytes_per_unit = bytes;
    c.flops_per_unit = 2.0 * (enc + dit + hift);
    c.parts = {{"encoder_flops", 2 * enc}, {"dit_flops", 2 * dit}, {"token2mel_flops", 2 * (enc + dit)},
               {"vocoder_flops", 2 * hift}, {"weight_bytes", bytes}, {"token2mel_bytes", bytes - voc_bytes},
               {"vocoder_bytes", voc_bytes}, {"token2mel_kernels", enc_k + dit_k}, {"vocoder_kernels", hift_k},
               {"kernels", enc_k + dit_k + hift_k}};
    c.notes.push_back("estimate from shapes: " + std::to_string(static_cast<int>(tokens)) + " tokens / " +
                      std::to_string(static_cast<int>(frames)) + " mel frames per window, " +
                      std::to_string(static_cast<int>(steps)) + " flow steps x 2 CFG branches, prompt L " +
                      std::to_string(static_cast<int>(l_est)) + "; HiFT at " +
                      std::to_string(a.t2w_mel_frames_vocoder) + " mel frames");
    return c;
}

}  // namespace

namespace {

// A tensor's ne[i] / element count, 0 when the file lacks it.
double dim_of(const CostFile &f, const std::string &n, int i) {
    const TensorInfo *t = f.find_tensor(n);
    return t ? static_cast<double>(t->ne[static_cast<size_t>(i)]) : 0.0;
}
double elems_of(const CostFile &f, const std::string &n) {
    const TensorInfo *t = f.find_tensor(n);
    return t ? nelem(*t) : 0.0;
}

// The decoder stage of a libmtmd family (its mmproj's a.gen.wav.* tensors), per 80-ms frame:
// what both families share; the caller adds the FLOPs and the bytes per frame. `wav_bytes`:
// those tensors' bytes.
StageCost gen_wav_stage(const CostFile &mm, double frames_per_s, double &wav_bytes) {
    StageCost d;
    d.stage = "decoder";
    d.files = {mm.path()};
    d.unit = "frame";
    d.units_per_audio_s = frames_per_s;
    d.weight_type = "f16";
    wav_bytes = 0;
    for (const auto &t : mm.tensors())
        if (starts(t.name, "a.gen.wav.")) wav_bytes += static_cast<double>(t.nbytes);
    return d;
}

// Pocket TTS (pockettts-layout.h), per 80-ms frame (12.5 per second of audio), from the shapes:
//   gen      the backbone's decode of one row (every tensor but one token_embd row, KV at
//            llm_kv_tokens) + one flow step (the a.gen.flow.* MLP, the EOS head, input_linear)
//   decoder  the mimi decoder (a.gen.wav.*): quant_out, the depthwise x16 upsampling, the
//            transformer at 200 Hz (16 positions a frame, attention over its 250-position
//            context), the SEANet decoder (each conv's K x Cin x Cout x its output length:
//            16 -> 96 -> 480 -> 1920 samples a frame); weights read once per call of
//            `decoder_frames_per_call` frames (the pipeline's steady chunk, 8).
// Norms, activations and the ELUs are left out (elementwise), as for Token2Wav.
std::vector<StageCost> pocket_costs(const CostFile &bb, const CostFile &mm, const FloorAssumptions &a) {
    constexpr double kFrames = 12.5, kPerCall = 8;
    std::vector<StageCost> out;
    StageCost g = llm_cost(bb, "pockettts", a);
    g.stage = "gen";
    g.unit = "frame";
    g.units_per_audio_s = kFrames;
    g.files.push_back(mm.path());
    double flow_bytes = 0, flow_flops = 0;
    for (const auto &t : mm.tensors()) {
        if (!starts(t.name, "a.gen.") || starts(t.name, "a.gen.wav.")) continue;
        flow_bytes += static_cast<double>(t.nbytes);
        if (is_matrix(t)) flow_flops += 2 * nelem(t);
    }
    g.bytes_per_unit += flow_bytes;
    g.flops_per_unit += flow_flops;
    g.parts.push_back({"flow_bytes", flow_bytes});
    g.parts.push_back({"flow_flops", flow_flops});
    g.notes.push_back("per frame: one backbone row + one flow step (clip's flow_n_step = 1)");
    out.push_back(std::move(g));

    double wbytes = 0;
    StageCost d = gen_wav_stage(mm, kFrames, wbytes);
    auto ne = [&](const std::string &n, int i) { return dim_of(mm, n, i); };
    const double D = ne("a.gen.wav.quant_out.weight", 1), L = ne("a.gen.wav.quant_out.weight", 0);
    const double pos = 16;  // transformer positions per frame (200 Hz)
    double tfm = 0;
    for (int i = 0; mm.find_tensor("a.gen.wav.tfm.blk." + std::to_string(i) + ".attn_q.weight"); ++i) {
        const std::string p = "a.gen.wav.tfm.blk." + std::to_string(i) + ".";
        tfm += 4 * D * D + 2 * D * ne(p + "ffn_up.weight", 1) + 2 * D * 250;  // q,k,v,o; FFN; QK^T + AV over 250
    }
    double seanet = 7 * ne("a.gen.wav.seanet.conv_in.weight", 1) * ne("a.gen.wav.seanet.conv_in.weight", 2) * pos;
    double len = pos;
    const int ratios[3] = {6, 5, 4};
    for (int s = 0; s < 3; ++s) {
        const std::string p = "a.gen.wav.seanet.blk." + std::to_string(s) + ".";
        seanet += ne(p + "scale_conv.weight", 0) * ne(p + "scale_conv.weight", 1) * ne(p + "scale_conv.weight", 2) * len;
        len *= ratios[s];
        seanet += 3 * ne(p + "res_conv1.weight", 1) * ne(p + "res_conv1.weight", 2) * len;
        seanet += ne(p + "res_conv2.weight", 1) * ne(p + "res_conv2.weight", 2) * len;
    }
    seanet += 3 * ne("a.gen.wav.seanet.conv_out.weight", 1) * len;
    const double up = 2 * D * pos;  // depthwise convT, k = 2 x stride: two taps per output
    const double macs = L * D + up + tfm * pos + seanet;
    d.flops_per_unit = 2 * macs;
    d.bytes_per_unit = wbytes / kPerCall;
    d.parts = {{"weight_bytes_per_call", wbytes}, {"transformer_flops", 2 * tfm * pos}, {"seanet_flops", 2 * seanet},
               {"upsample_flops", 2 * (L * D + up)}, {"kernels", kKernelsPerMatrix * 20}};
    d.notes.push_back("an ESTIMATE from the shapes (convolutions and products; elementwise work left out); weights read "
                      "once per call of 8 frames");
    out.push_back(std::move(d));
    return out;
}

// Qwen3-TTS (qwen3tts-layout.h), per 80-ms frame (12.5 per second of audio), from the shapes:
//   gen      the talker's decode of one row (every tensor but one token_embd row, KV at
//            llm_kv_tokens) + the code predictor: 15 sequential steps (clip's graph samples code
//            k before step k+1 starts), so its blocks' weights are read 15 times a frame; 16 rows
//            through its blocks (h + code 0, then one row a step), one head row block a step.
//   decoder  code2wav (a.gen.wav.*) per 72-frame window, the only unit clip.cpp runs (a short
//            window is padded): RVQ out-projections, pre-conv, 8 transformer layers (attention over
//            the 72-frame window), 2 x (convT x2 + ConvNeXt), the DAC (convT by 8, 5, 4, 3 and 3
//            residual units each: 4 -> 32 -> 160 -> 640 -> 1920 samples a frame); weights read once
//            a window. This is the floor of one decode per window (llama-tts's schedule): a stream
//            of c-frame calls decodes each window 72/c times (qwen3tts-engine.h).
std::vector<StageCost> qwen3_costs(const CostFile &bb, const CostFile &mm, const FloorAssumptions &a) {
    constexpr double kFrames = 12.5, kWindow = 72, kSteps = 15;
    std::vector<StageCost> out;
    StageCost g = llm_cost(bb, "qwen3tts", a);
    g.stage = "gen";
    g.unit = "frame";
    g.units_per_audio_s = kFrames;
    g.files.push_back(mm.path());
    double blk_bytes = 0, blk_macs = 0, once_bytes = 0, once_macs = 0;
    for (const auto &t : mm.tensors()) {
        if (!starts(t.name, "a.gen.code.")) continue;
        if (starts(t.name, "a.gen.code.blk.") || t.name == "a.gen.code.output_norm.weight" || t.name == "a.gen.code.proj_in.weight") {
            blk_bytes += static_cast<double>(t.nbytes);
            if (is_matrix(t)) blk_macs += nelem(t);
        } else if (t.name == "a.gen.code.head.weight") {  // one [n_embd, 2048] head per step: 15 heads, each once
            once_bytes += static_cast<double>(t.nbytes);
            once_macs += nelem(t);
        } else if (t.name == "a.gen.code.embd.weight" || t.name == "a.gen.code.out_embd.weight") {
            // code embeddings: one row per code looked up (16 a frame), not the whole table
            const double per_row = static_cast<double>(t.nbytes) / (nelem(t) / static_cast<double>(t.ne[0]));
            once_bytes += 16 * per_row;
        }
    }
    const double pred_bytes = kSteps * blk_bytes + once_bytes, pred_flops = 2 * (16 * blk_macs + once_macs);
    g.bytes_per_unit += pred_bytes;
    g.flops_per_unit += pred_flops;
    g.parts.push_back({"predictor_bytes", pred_bytes});
    g.parts.push_back({"predictor_flops", pred_flops});
    g.parts.push_back({"kernels", kKernelsPerMatrix * 10.0 * kSteps});
    g.notes.push_back("per frame: one talker row + the code predictor's 15 sequential steps (its blocks read 15 times)");
    out.push_back(std::move(g));

    double wbytes = 0;
    StageCost d = gen_wav_stage(mm, kFrames, wbytes);
    auto ne = [&](const std::string &n, int i) { return dim_of(mm, n, i); };
    auto elems = [&](const std::string &n) { return elems_of(mm, n); };
    // MACs per frame of the window (positions per frame at each rate).
    const double q = ne("a.gen.wav.quant.first.out_proj.weight", 1), cd = ne("a.gen.wav.quant.first.out_proj.weight", 0);
    const double rvq = 2 * cd * q;  // the semantic and the summed acoustic out-projections
    const double pre = elems("a.gen.wav.pre_conv.weight");
    double tfm = elems("a.gen.wav.tfm.in_proj.weight") + elems("a.gen.wav.tfm.out_proj.weight");
    for (int i = 0; mm.find_tensor("a.gen.wav.tfm.blk." + std::to_string(i) + ".attn_q.weight"); ++i) {
        const std::string l = "a.gen.wav.tfm.blk." + std::to_string(i) + ".";
        for (const char *n : {"attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down"}) tfm += elems(l + n + ".weight");
        tfm += 2 * kWindow * ne(l + "attn_q.weight", 1);  // QK^T + AV over the window
    }
    double up = 0, pos = 1;
    for (int i = 0; mm.find_tensor("a.gen.wav.up.blk." + std::to_string(i) + ".conv.weight"); ++i) {
        const std::string u = "a.gen.wav.up.blk." + std::to_string(i) + ".";
        pos *= 2;  // convT k = stride = 2: one tap an output
        up += pos * (elems(u + "conv.weight") / 2 + elems(u + "dwconv.weight") + elems(u + "pw1.weight") + elems(u + "pw2.weight"));
    }
    double dac = pos * elems("a.gen.wav.dac.entry.weight");
    for (int i = 0; mm.find_tensor("a.gen.wav.dac.blk." + std::to_string(i) + ".conv.weight"); ++i) {
        const std::string b = "a.gen.wav.dac.blk." + std::to_string(i) + ".";
        const double k = ne(b + "conv.weight", 0);  // 2 x stride: two taps an output
        pos *= k / 2;
        dac += pos * elems(b + "conv.weight") / (k / 2);
        for (int r = 0; r < 3; ++r) {
            const std::string rr = b + "res." + std::to_string(r) + ".";
            dac += pos * (elems(rr + "conv1.weight") + elems(rr + "conv2.weight"));
        }
    }
    dac += pos * elems("a.gen.wav.dac.post_conv.weight");
    const double macs = rvq + pre + tfm + up + dac;
    d.flops_per_unit = 2 * macs;
    d.bytes_per_unit = wbytes / kWindow;
    d.parts = {{"weight_bytes_per_window", wbytes}, {"window_flops", 2 * macs * kWindow},
               {"transformer_flops", 2 * tfm}, {"upsample_flops", 2 * (rvq + pre + up)}, {"dac_flops", 2 * dac},
               {"samples_per_frame", pos}, {"kernels", kKernelsPerMatrix * 40}};
    d.notes.push_back("an ESTIMATE from the shapes (convolutions and products; elementwise work left out); one decode "
                      "per 72-frame window: c-frame streaming calls cost 72/c windows' work per window");
    out.push_back(std::move(d));
    return out;
}

// The speak path's files, however they were found.
struct Found {
    std::unique_ptr<CostFile> pocket_backbone, pocket_mmproj;  // a Pocket TTS kit
    std::unique_ptr<CostFile> qwen3_backbone, qwen3_mmproj;    // a Qwen3-TTS kit
    std::unique_ptr<CostFile> llm, tts, projector;
    std::string llm_arch;
    std::map<std::string, std::unique_ptr<CostFile>> t2w;
};

void add_stages(ModelCosts &mc, const Found &f, const FloorAssumptions &a, const std::string &origin) {
    if (f.pocket_backbone && f.pocket_mmproj) {
        for (auto &c : pocket_costs(*f.pocket_backbone, *f.pocket_mmproj, a)) mc.stages.push_back(std::move(c));
        mc.family = "pocket-tts";
        mc.notes.push_back("family pocket-tts: stages gen (backbone + flow) and decoder (mimi), per 80-ms frame");
        return;
    }
    if (f.pocket_backbone || f.pocket_mmproj)
        throw_usage("--models: '" + origin + "' has one of Pocket TTS's two files (pocket-tts.gguf + mmproj-pocket-tts.gguf)");
    if (f.qwen3_backbone && f.qwen3_mmproj) {
        for (auto &c : qwen3_costs(*f.qwen3_backbone, *f.qwen3_mmproj, a)) mc.stages.push_back(std::move(c));
        mc.family = "qwen3-tts";
        mc.notes.push_back("family qwen3-tts: stages gen (talker + code predictor) and decoder (code2wav), per 80-ms frame");
        return;
    }
    if (f.qwen3_backbone || f.qwen3_mmproj)
        throw_usage("--models: '" + origin + "' has one of Qwen3-TTS's two files (qwen3-tts.gguf + mmproj-qwen3-tts.gguf)");
    if (f.llm) mc.stages.push_back(llm_cost(*f.llm, f.llm_arch, a));
    else mc.notes.push_back("no LLM GGUF found: no llm floor");
    if (f.tts) mc.stages.push_back(tts_cost(*f.tts, f.projector.get(), a));
    else mc.notes.push_back("no TTS GGUF found (architecture llama with head_code.0.weight): no tts floor");
    if (f.t2w.count("flow_matching") || f.t2w.count("hifigan2") || f.t2w.count("encoder")) {
        for (const auto &n : {"encoder", "flow_matching", "flow_extra", "hifigan2"})
            if (!f.t2w.count(n)) mc.notes.push_back(std::string("t2w: ") + n + ".gguf missing: its part is not counted");
        mc.stages.push_back(t2w_cost(f.t2w, a, mc.notes));
    } else {
        mc.notes.push_back("no token2wav files (encoder/flow_matching/hifigan2.gguf): no t2w floor");
    }
    if (mc.stages.empty()) throw_usage("--models: no speak-path GGUF file found under '" + origin + "'");
}

}  // namespace

ModelCosts model_costs(const std::string &dir, const FloorAssumptions &a) {
    a.validate();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw_usage("--models: '" + dir + "' is not a directory");
    ModelCosts mc;
    mc.dir = dir;
    Found found;
    const std::vector<std::string> t2w_names = {"encoder", "flow_matching", "flow_extra", "hifigan2", "prompt_cache"};
    auto opts = fs::directory_options::skip_permission_denied;
    for (auto it = fs::recursive_directory_iterator(dir, opts, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it.depth() > 2) {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_directory() && it->path().filename().string().rfind('.', 0) == 0) {
            it.disable_recursion_pending();  // .rtf-cache and other hidden folders: derived copies
            continue;
        }
        if (!it->is_regular_file() || it->path().extension() != ".gguf") continue;
        const std::string path = it->path().string(), stem = it->path().stem().string();
        std::unique_ptr<CostFile> f;
        try {
            f = std::make_unique<CostFile>(std::make_unique<GgufFile>(path));
        } catch (const Error &e) {
            mc.notes.push_back("skipped " + path + ": " + e.what());
            continue;
        }
        if (std::find(t2w_names.begin(), t2w_names.end(), stem) != t2w_names.end()) {
            found.t2w[stem] = std::move(f);
            continue;
        }
        auto arch = f->find_string("general.architecture");
        if (!arch) {
            mc.notes.push_back("skipped " + path + ": no general.architecture and not a token2wav file name");
        } else if (*arch == "qwen3tts") {
            found.qwen3_backbone = std::move(f);
        } else if (*arch == "clip" && f->find_string("clip.gen.audio.projector_type").value_or("") == "qwen3tts_gen") {
            found.qwen3_mmproj = std::move(f);
        } else if (*arch == "pockettts") {
            found.pocket_backbone = std::move(f);
        } else if (*arch == "clip" && f->find_string("clip.gen.audio.projector_type").value_or("") == "pockettts_gen") {
            found.pocket_mmproj = std::move(f);
        } else if (*arch == "projector") {
            found.projector = std::move(f);
        } else if (*arch == "llama" && f->find_tensor("head_code.0.weight")) {
            if (found.tts) mc.notes.push_back("second TTS file ignored: " + path);
            else found.tts = std::move(f);
        } else if (f->find_int(*arch + ".block_count")) {
            if (found.llm) mc.notes.push_back("second LLM file ignored: " + path);
            else {
                found.llm = std::move(f);
                found.llm_arch = *arch;
            }
        } else {
            mc.notes.push_back("skipped " + path + ": architecture " + *arch + " is not part of the speak path");
        }
    }
    add_stages(mc, found, a, dir);
    return mc;
}

ModelCosts model_costs_for_layout(gguf::minicpmo45::Scale scale, gguf::WeightType type, const FloorAssumptions &a) {
    namespace m = gguf::minicpmo45;
    using gguf::Role;
    a.validate();
    const m::Dims d = m::dims_for_scale(scale);
    const std::string origin = std::string("layout:") + m::scale_name(scale) + "-" + gguf::weight_type_name(type);
    ModelCosts mc;
    mc.dir = origin;
    Found found;
    auto file = [&](Role r) { return std::make_unique<CostFile>(m::layout_for(r, d, type), origin); };
    found.llm = file(Role::llm);
    found.llm_arch = *found.llm->find_string("general.architecture");
    found.tts = file(Role::tts);
    found.projector = file(Role::projector);
    for (Role r : {Role::encoder, Role::flow_matching, Role::flow_extra, Role::hifigan2, Role::prompt_cache}) {
        std::string stem = fs::path(m::file_name(r, type)).stem().string();
        found.t2w[stem] = file(r);
    }
    mc.notes.push_back("costed from the layout table (" + origin + "): the shapes a kit of that scale and type has, no files read");
    add_stages(mc, found, a, origin);
    return mc;
}

StageCost decoder_file_cost(const std::string &path, const std::string &stage, int kv_tokens) {
    CostFile f(std::make_unique<GgufFile>(path));
    auto arch = f.find_string("general.architecture");
    if (!arch) throw_usage(path + ": no general.architecture: not a libllama decoder file");
    FloorAssumptions a;
    a.llm_kv_tokens = std::max(1, kv_tokens);
    StageCost c = llm_cost(f, *arch, a);
    c.stage = stage;
    c.unit = "decoded token";
    c.units_per_audio_s = 0;
    return c;
}

nlohmann::json to_json(const StageCost &c) {
    nlohmann::json parts = nlohmann::json::object();
    for (const auto &[k, v] : c.parts) parts[k] = v;
    return {{"stage", c.stage},
            {"files", c.files},
            {"unit", c.unit},
            {"units_per_audio_s", c.units_per_audio_s},
            {"bytes_per_unit", c.bytes_per_unit},
            {"flops_per_unit", c.flops_per_unit},
            {"weight_type", c.weight_type},
            {"parts_per_unit", parts},
            {"notes", c.notes}};
}

}  // namespace rtf::predict
