#include "models/gguf/layout-check.h"

#include "models/gguf/pockettts-layout.h"
#include "models/gguf/qwen3tts-layout.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf::gguf {

namespace fs = std::filesystem;
using namespace minicpmo45;

std::string Problem::message() const {
    std::string m = file + ": ";
    if (kind == "missing_tensor") return m + "tensor '" + subject + "' is missing (expected " + expected + ")";
    if (kind == "extra_tensor") return m + "tensor '" + subject + "' " + actual + " is not part of the layout";
    if (kind == "shape")
        return m + "tensor '" + subject + "' has shape " + actual + ", expected " + expected;
    if (kind == "type") return m + "tensor '" + subject + "' has type " + actual + ", expected " + expected;
    if (kind == "missing_key") return m + "metadata key '" + subject + "' is missing";
    if (kind == "key_value")
        return m + "metadata key '" + subject + "' is " + actual + ", expected " + expected;
    if (kind == "truncated")
        return m + "truncated: the header promises " + expected + " bytes, the file has " + actual +
               (subject.empty() ? "" : "; tensor '" + subject + "' is cut off");
    if (kind == "not_gguf") return m + "not a GGUF file (it does not start with the magic bytes \"GGUF\")";
    if (kind == "bad_header") return m + actual;
    if (kind == "unknown_role")
        return m + "not a file of the minicpmo45 family (" + actual + "; name it as in the kit or pass the role)";
    if (kind == "missing_file") return m + "missing (" + expected + ")";
    if (kind == "vocab") return m + subject + ": " + actual + ", expected " + expected;
    m += kind;
    if (!subject.empty()) m += " '" + subject + "'";
    if (!actual.empty()) m += ": " + actual;
    if (!expected.empty()) m += " (expected " + expected + ")";
    return m;
}

nlohmann::json to_json(const Problem &p) {
    return {{"file", p.file},         {"kind", p.kind},     {"subject", p.subject},
            {"expected", p.expected}, {"actual", p.actual}, {"message", p.message()}};
}

namespace {

std::string type_name(ggml_type t) { return ggml_type_name(t); }

bool has_prefix(const GgufFile &f, const std::string &prefix) {
    for (const auto &t : f.tensors())
        if (t.name.rfind(prefix, 0) == 0) return true;
    return false;
}

// Max i + 1 over tensor names "<prefix><i>." (0 when none).
int64_t count_blocks(const GgufFile &f, const std::string &prefix) {
    int64_t n = 0;
    for (const auto &t : f.tensors()) {
        if (t.name.rfind(prefix, 0) != 0) continue;
        const std::string rest = t.name.substr(prefix.size());
        size_t dot = rest.find('.');
        if (dot == 0 || dot == std::string::npos) continue;
        const std::string idx = rest.substr(0, dot);
        if (!std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
        if (idx.size() > 6) continue;
        n = std::max<int64_t>(n, std::stoll(idx) + 1);
    }
    return n;
}

int64_t tensor_dim(const GgufFile &f, const std::string &name, int dim, int64_t fallback) {
    const auto *t = f.find_tensor(name);
    return t ? t->ne[static_cast<size_t>(dim)] : fallback;
}

int64_t key_or(const GgufFile &f, const std::string &key, int64_t fallback) {
    auto v = f.find_int(key);
    return v && *v > 0 ? *v : fallback;
}

// GgufFile's message without the leading "<path>: ".
std::string header_error(const std::string &what, const std::string &path) {
    return what.rfind(path + ": ", 0) == 0 ? what.substr(path.size() + 2) : what;
}

std::string base_name(const std::string &path) { return fs::path(path).filename().string(); }

}  // namespace

std::optional<Role> detect_role(const std::string &path, const GgufFile *f) {
    const std::string b = base_name(path);
    if (b == "encoder.gguf") return Role::encoder;
    if (b == "flow_matching.gguf") return Role::flow_matching;
    if (b == "flow_extra.gguf") return Role::flow_extra;
    if (b == "hifigan2.gguf") return Role::hifigan2;
    if (b == "prompt_cache.gguf") return Role::prompt_cache;
    // The bundle's audio/MiniCPM-o-4_5-audio-F16.gguf, or the converter's minicpmo-apm.gguf.
    if (b.find("-audio-") != std::string::npos || b.find("apm") != std::string::npos) return Role::apm;
    if (b.find("-vision-") != std::string::npos || b.find("vpm") != std::string::npos) return Role::vpm;
    if (b.find("projector") != std::string::npos) return Role::projector;
    if (b.find("pocket-tts") != std::string::npos || b.find("qwen3-tts") != std::string::npos)
        return b.rfind("mmproj", 0) == 0 ? Role::mmproj : Role::backbone;
    if (b.find("-tts-") != std::string::npos || b.rfind("tts", 0) == 0) return Role::tts;
    if (!f) return std::nullopt;
    const auto arch = f->find_string("general.architecture").value_or("");
    if (arch == "pockettts" || arch == "qwen3tts") return Role::backbone;
    if (arch == "clip" && f->find_string("clip.gen.audio.projector_type").has_value()) return Role::mmproj;
    if (arch == "qwen3") return Role::llm;
    if (arch == "projector") return Role::projector;
    if (arch == "whisper" || f->find_tensor("encoder.conv1.weight")) return Role::apm;
    if (arch == "clip" || f->find_tensor("v.patch_embd.weight")) return Role::vpm;
    if (arch == "llama" && f->find_tensor("emb_code.0.weight")) return Role::tts;
    if (f->find_tensor("embed.out.0.weight") || has_prefix(*f, "encoders.")) return Role::encoder;
    if (has_prefix(*f, "estimator.")) return Role::flow_matching;
    if (f->find_tensor("input_embedding.weight")) return Role::flow_extra;
    if (f->find_tensor("conv_pre.weight") || has_prefix(*f, "resblocks.")) return Role::hifigan2;
    if (has_prefix(*f, "prompt_cache.")) return Role::prompt_cache;
    return std::nullopt;
}

Dims infer_dims(const GgufFile &f, Role r) {
    Dims d;
    switch (r) {
        case Role::llm: {
            auto &l = d.llm;
            const std::string a = "qwen3.";
            l.n_layer = key_or(f, a + "block_count", count_blocks(f, "blk."));
            l.n_embd = key_or(f, a + "embedding_length", tensor_dim(f, "token_embd.weight", 0, l.n_embd));
            l.n_ff = key_or(f, a + "feed_forward_length", tensor_dim(f, "blk.0.ffn_up.weight", 1, l.n_ff));
            l.n_head = key_or(f, a + "attention.head_count", l.n_head);
            l.n_head_kv = key_or(f, a + "attention.head_count_kv", l.n_head_kv);
            l.head_dim = key_or(f, a + "attention.key_length", l.n_head > 0 ? l.n_embd / l.n_head : l.head_dim);
            l.n_vocab = tensor_dim(f, "token_embd.weight", 1, l.n_vocab);
            break;
        }
        case Role::tts: {
            auto &t = d.tts;
            const std::string a = "llama.";
            t.n_layer = key_or(f, a + "block_count", count_blocks(f, "blk."));
            t.n_embd = key_or(f, a + "embedding_length", tensor_dim(f, "emb_code.0.weight", 0, t.n_embd));
            t.n_ff = key_or(f, a + "feed_forward_length", tensor_dim(f, "blk.0.ffn_up.weight", 1, t.n_ff));
            t.n_head = key_or(f, a + "attention.head_count", t.n_head);
            t.n_head_kv = key_or(f, a + "attention.head_count_kv", t.n_head_kv);
            t.n_llm_embd = tensor_dim(f, "projector_semantic.linear1.weight", 0,
                                      tensor_dim(f, "projector_spk.linear1.weight", 0, t.n_llm_embd));
            break;
        }
        case Role::projector:
            d.projector.n_in = tensor_dim(f, "linear1.weight", 0, d.projector.n_in);
            d.projector.n_out = tensor_dim(f, "linear2.weight", 0, tensor_dim(f, "linear1.weight", 1, d.projector.n_out));
            break;
        case Role::encoder:
            d.encoder.n_blocks = count_blocks(f, "encoders.");
            d.encoder.n_up_blocks = count_blocks(f, "up_encoders.");
            break;
        case Role::flow_matching: d.flow_matching.n_blocks = count_blocks(f, "estimator.blocks."); break;
        case Role::prompt_cache:
            d.prompt_cache.n_steps = key_or(f, "mtmd.prompt_cache.n_timesteps", d.prompt_cache.n_steps);
            d.prompt_cache.L = tensor_dim(f, "prompt_cache.conformer_att_cache", 1,
                                          tensor_dim(f, "prompt_cache.estimator_att_cache", 1, d.prompt_cache.L));
            // The caches hold one slot per conformer layer and per (DiT block, Euler step):
            // their sizes follow the encoder's and the DiT's block counts (twins shrink them).
            d.prompt_cache.n_conf_layers =
                tensor_dim(f, "prompt_cache.conformer_att_cache", 3, d.prompt_cache.n_conf_layers);
            if (d.prompt_cache.n_steps > 0) {
                int64_t slots = tensor_dim(f, "prompt_cache.estimator_cnn_cache", 2,
                                           d.prompt_cache.n_dit_blocks * d.prompt_cache.n_steps);
                if (slots % d.prompt_cache.n_steps == 0) d.prompt_cache.n_dit_blocks = slots / d.prompt_cache.n_steps;
            }
            break;
        case Role::apm: {
            // The runtime's own rule (docs/minicpmo45.md §2.10): widths from the keys, n_ctx 1500
            // unless max_source_positions says otherwise; the projector widths from its tensors.
            auto &a = d.apm;
            a.n_layer = key_or(f, "encoder_layers", count_blocks(f, "encoder.blocks."));
            a.d = key_or(f, "d_model", tensor_dim(f, "encoder.conv1.weight", 2, a.d));
            a.n_head = key_or(f, "encoder_attention_heads", a.n_head);
            a.n_ff = tensor_dim(f, "encoder.blocks.0.mlp.0.weight", 1, key_or(f, "encoder_ffn_dim", a.n_ff));
            a.n_mel = key_or(f, "n_mel", a.n_mel);
            a.n_ctx = key_or(f, "max_source_positions", kApmCtx);
            a.n_proj = tensor_dim(f, "audio_projector.linear1.weight", 1, a.n_proj);
            a.n_out = tensor_dim(f, "audio_projector.linear2.weight", 1, a.n_out);
            break;
        }
        case Role::vpm: {
            auto &v = d.vpm;
            const std::string c = "clip.vision.";
            v.n_layer = key_or(f, c + "block_count", count_blocks(f, "v.blk."));
            v.d = key_or(f, c + "embedding_length", tensor_dim(f, "v.patch_embd.weight", 3, v.d));
            v.n_head = key_or(f, c + "attention.head_count", v.n_head);
            v.n_ff = key_or(f, c + "feed_forward_length", v.n_ff);
            v.patch = key_or(f, c + "patch_size", v.patch);
            v.image_size = key_or(f, c + "image_size", v.image_size);
            v.n_embd = tensor_dim(f, "resampler.query", 0, v.n_embd);
            v.n_query = tensor_dim(f, "resampler.query", 1, v.n_query);
            break;
        }
        case Role::flow_extra:
        case Role::hifigan2:
        case Role::backbone:  // pockettts::infer_dims
        case Role::mmproj: break;
    }
    return d;
}

std::vector<Problem> check_layout(const GgufFile &f, Role role) {
    std::vector<Problem> out;
    const std::string &file = f.path();
    auto add = [&](std::string kind, std::string subject, std::string expected, std::string actual) {
        out.push_back(Problem{file, std::move(kind), std::move(subject), std::move(expected), std::move(actual)});
    };
    // The libmtmd families share the roles backbone and mmproj; the file says which family it is.
    const bool mtmd_family = role == Role::backbone || role == Role::mmproj;
    const bool qwen3 = mtmd_family && (f.find_string("general.architecture").value_or("") == "qwen3tts" ||
                                       f.find_string("clip.gen.audio.projector_type").value_or("") == "qwen3tts_gen");
    const bool pocket = mtmd_family && !qwen3;
    const Dims dims = mtmd_family ? Dims{} : infer_dims(f, role);
    const pockettts::Dims pdims = pocket ? pockettts::infer_dims(f, role) : pockettts::Dims{};
    const qwen3tts::Dims qdims = qwen3 ? qwen3tts::infer_dims(f, role) : qwen3tts::Dims{};
    const FileLayout want = qwen3    ? qwen3tts::layout_for(role, qdims, WeightType::f16)
                            : pocket ? pockettts::layout_for(role, pdims, WeightType::f16)
                                     : layout_for(role, dims, WeightType::f16);

    // Metadata keys.
    for (const auto &k : want.kvs) {
        if (!f.has_key(k.key)) {
            if (k.required) add("missing_key", k.key, "", "");
            continue;
        }
        if (k.check_value) {
            if (const auto *s = std::get_if<std::string>(&k.value)) {
                const auto v = f.find_string(k.key);
                if (!v || *v != *s) add("key_value", k.key, "\"" + *s + "\"", f.value_text(k.key));
            } else if (const auto *u = std::get_if<uint32_t>(&k.value)) {
                const auto v = f.find_int(k.key);
                if (!v || *v != static_cast<int64_t>(*u)) add("key_value", k.key, std::to_string(*u), f.value_text(k.key));
            } else if (const auto *a = std::get_if<std::vector<float>>(&k.value)) {
                // An f32 array is checked by its length (the filter bank: n_mel x 201 values).
                const bool f32 = f.key_type(k.key) == GGUF_TYPE_ARRAY &&
                                 gguf_get_arr_type(f.ctx(), gguf_find_key(f.ctx(), k.key.c_str())) == GGUF_TYPE_FLOAT32;
                if (!f32 || f.array_size(k.key) != a->size())
                    add("key_value", k.key, "an f32 array of " + std::to_string(a->size()) + " values", f.value_text(k.key));
            }
        }
    }

    // Tensors.
    std::set<std::string> wanted;
    for (const auto &t : want.tensors) {
        wanted.insert(t.name);
        const TensorInfo *have = f.find_tensor(t.name);
        const int nd = shape_dims(t.ne);
        if (!have) {
            add("missing_tensor", t.name, format_shape(t.ne, nd) + " " + type_name(t.type), "");
            continue;
        }
        if (have->ne != t.ne)
            add("shape", t.name, format_shape(t.ne, nd), format_shape(have->ne, std::max(nd, have->n_dims)));
        if (t.any_weight_type) {
            // Any float or quantized type of ggml (a real file may be F16, BF16, Q8_0 or a K-quant mix).
            const bool ok = have->type == GGML_TYPE_F32 || have->type == GGML_TYPE_F16 ||
                            have->type == GGML_TYPE_BF16 || ggml_is_quantized(have->type);
            if (!ok) add("type", t.name, "a float or quantized type", type_name(have->type));
        } else if (have->type != t.type) {
            add("type", t.name, type_name(t.type), type_name(have->type));
        }
    }
    for (const auto &t : f.tensors())
        if (!wanted.count(t.name)) add("extra_tensor", t.name, "", format_shape(t.ne, t.n_dims) + " " + type_name(t.type));

    // Vocabulary: the token list must match the embedding rows (libllama rejects a mismatch).
    if ((want.tokenizer_tokens > 0 || role == Role::backbone) && f.has_key("tokenizer.ggml.tokens")) {
        const auto n_tok = static_cast<int64_t>(f.array_size("tokenizer.ggml.tokens"));
        const int64_t rows = role == Role::llm ? dims.llm.n_vocab
                             : qwen3       ? qdims.talker.n_vocab()
                             : pocket      ? pdims.backbone.n_vocab()
                                           : kTtsVocab;
        if (n_tok != rows)
            add("vocab", "tokenizer.ggml.tokens", std::to_string(rows) + " tokens (token_embd rows)",
                std::to_string(n_tok) + " tokens");
    }
    // A piece listed twice makes libllama abort while loading (llama-vocab.cpp asserts): named here instead.
    if (role == Role::backbone && f.key_type("tokenizer.ggml.tokens") == GGUF_TYPE_ARRAY) {
        const int64_t id = gguf_find_key(f.ctx(), "tokenizer.ggml.tokens");
        if (gguf_get_arr_type(f.ctx(), id) == GGUF_TYPE_STRING) {
            std::set<std::string> seen;
            const size_t n = gguf_get_arr_n(f.ctx(), id);
            for (size_t i = 0; i < n; ++i) {
                const std::string piece = gguf_get_arr_str(f.ctx(), id, i);
                if (!seen.insert(piece).second) {
                    add("vocab", "tokenizer.ggml.tokens", "each piece once", "'" + piece + "' again at " + std::to_string(i));
                    break;
                }
            }
        }
    }
    // Block counts inferred from names: a file with none is not a usable file of its role.
    if (role == Role::encoder && (dims.encoder.n_blocks == 0 || dims.encoder.n_up_blocks == 0))
        add("missing_tensor", dims.encoder.n_blocks == 0 ? "encoders.0.*" : "up_encoders.0.*",
            "at least one conformer block", "none");
    if (role == Role::mmproj && pdims.flow.depth == 0)
        add("missing_tensor", "a.gen.flow.blk.0.*", "at least one flow block", "none");
    if (role == Role::flow_matching && dims.flow_matching.n_blocks == 0)
        add("missing_tensor", "estimator.blocks.0.*", "at least one DiT block", "none");
    if (role == Role::apm) {
        const auto &a = dims.apm;
        if (a.n_layer <= 0) add("missing_tensor", "encoder.blocks.0.*", "at least one encoder block", "none");
        if (a.n_head <= 0 || a.d % a.n_head != 0)
            add("key_value", "encoder_attention_heads", "a divisor of d_model " + std::to_string(a.d),
                std::to_string(a.n_head));
    }

    if (f.truncated()) {
        const auto *cut = f.first_cut_tensor();
        add("truncated", cut ? cut->name : "", std::to_string(f.expected_size()), std::to_string(f.file_size()));
    }
    return out;
}

std::vector<Problem> check_layout(const std::string &path, std::optional<Role> role) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw_usage(path + ": no such file");
    if (fs::is_directory(path, ec)) throw_usage(path + ": is a directory (check_layout takes one GGUF file)");
    {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw_usage(path + ": cannot open for reading");
    }
    if (!has_gguf_magic(path))
        return {Problem{path, "not_gguf", "", "a GGUF file (magic \"GGUF\")", "other content"}};
    std::unique_ptr<GgufFile> f;
    try {
        f = std::make_unique<GgufFile>(path);
    } catch (const Error &e) {
        return {Problem{path, "bad_header", "", "a readable GGUF header", header_error(e.what(), path)}};
    }
    if (!role) role = detect_role(path, f.get());
    if (!role)
        return {Problem{path, "unknown_role", "", "a file of the minicpmo45 family",
                        "architecture '" + f->find_string("general.architecture").value_or("") + "'"}};
    return check_layout(*f, *role);
}

void require_layout(const std::string &path, std::optional<Role> role) {
    const auto problems = check_layout(path, role);
    if (problems.empty()) return;
    std::string msg = path + ": does not have the layout of a MiniCPM-o 4.5 " +
                      (role ? role_name(*role) : "speak-path") + " file (" + std::to_string(problems.size()) +
                      " problem" + (problems.size() == 1 ? "" : "s") + "; `rtf inspect` lists them):";
    const size_t n = std::min<size_t>(problems.size(), 20);
    for (size_t i = 0; i < n; ++i) msg += "\n  - " + problems[i].message();
    if (problems.size() > n) msg += "\n  ... and " + std::to_string(problems.size() - n) + " more";
    throw_usage(msg);
}

size_t InspectReport::n_problems() const {
    size_t n = kit_problems.size();
    for (const auto &f : files) n += f.problems.size();
    return n;
}

namespace {

bool in_rtf_cache(const fs::path &p) {
    for (const auto &part : p.parent_path())
        if (part == ".rtf-cache") return true;
    return false;
}

InspectedFile inspect_derived(const std::string &path) {
    InspectedFile r;
    r.path = path;
    r.derived = true;
    r.role = "derived";
    std::error_code ec;
    r.bytes = static_cast<uint64_t>(fs::file_size(path, ec));
    try {
        GgufFile f(path);
        r.n_tensors = static_cast<int64_t>(f.tensors().size());
        r.architecture = f.find_string("general.architecture").value_or("");
    } catch (const Error &e) {
        r.problems.push_back(Problem{path, "bad_header", "", "a readable GGUF header (rtfkit's cache: delete it, the next run rebuilds it)",
                                     header_error(e.what(), path)});
    }
    return r;
}

InspectedFile inspect_file(const std::string &path, bool dir_mode) {
    InspectedFile r;
    r.path = path;
    std::error_code ec;
    r.bytes = static_cast<uint64_t>(fs::file_size(path, ec));
    if (!has_gguf_magic(path)) {
        if (auto role = detect_role(path, nullptr)) r.role = role_name(*role);
        r.problems = check_layout(path, std::nullopt);
        return r;
    }
    std::unique_ptr<GgufFile> f;
    try {
        f = std::make_unique<GgufFile>(path);
    } catch (const Error &e) {
        r.problems.push_back(Problem{path, "bad_header", "", "a readable GGUF header", header_error(e.what(), path)});
        return r;
    }
    r.n_tensors = static_cast<int64_t>(f->tensors().size());
    r.architecture = f->find_string("general.architecture").value_or("");
    const auto role = detect_role(path, f.get());
    if (!role) {
        if (dir_mode) {
            r.skipped = true;
        } else {
            r.problems.push_back(Problem{path, "unknown_role", "", "a file of the minicpmo45 family",
                                         "architecture '" + r.architecture + "'"});
        }
        return r;
    }
    r.role = role_name(*role);
    r.problems = check_layout(*f, *role);
    return r;
}

}  // namespace

InspectReport inspect_path(const std::string &path) {
    InspectReport rep;
    rep.path = path;
    std::error_code ec;
    if (!fs::exists(path, ec)) throw_usage(path + ": no such file or directory");
    if (!fs::is_directory(path, ec)) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw_usage(path + ": cannot open for reading");
        rep.files.push_back(inspect_file(path, false));
        return rep;
    }
    std::vector<std::string> paths;
    for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it.depth() > 2) {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file(ec) && it->path().extension() == ".gguf") paths.push_back(it->path().string());
    }
    if (ec) throw_usage(path + ": cannot list directory (" + ec.message() + ")");
    std::sort(paths.begin(), paths.end());
    for (const auto &p : paths) rep.files.push_back(in_rtf_cache(fs::path(p).lexically_relative(path)) ? inspect_derived(p)
                                                                                                     : inspect_file(p, true));

    // A kit written by `rtf twin` lists its files: each must exist with the recorded size.
    const fs::path kit_json = fs::path(path) / "rtf-kit.json";
    if (fs::exists(kit_json, ec)) {
        try {
            std::ifstream in(kit_json);
            const auto j = nlohmann::json::parse(in);
            for (const auto &f : j.at("files")) {
                const fs::path p = fs::path(path) / f.at("path").get<std::string>();
                if (!fs::exists(p, ec)) {
                    rep.kit_problems.push_back(Problem{p.string(), "missing_file", "", "listed in rtf-kit.json", "missing"});
                    continue;
                }
                const auto want = f.at("bytes").get<uint64_t>();
                const auto have = static_cast<uint64_t>(fs::file_size(p, ec));
                if (want != have && have >= want)  // shorter files are reported as truncated by the file check
                    rep.kit_problems.push_back(Problem{p.string(), "size", "", std::to_string(want) + " bytes (rtf-kit.json)",
                                                       std::to_string(have) + " bytes"});
            }
        } catch (const nlohmann::json::exception &e) {
            rep.kit_problems.push_back(Problem{kit_json.string(), "bad_kit_json", "", "valid rtf-kit.json", e.what()});
        }
    } else if (rep.files.empty()) {
        rep.kit_problems.push_back(Problem{path, "missing_file", "", "*.gguf files", "none in the directory"});
    }
    return rep;
}

nlohmann::json to_json(const InspectReport &r) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto &f : r.files) {
        nlohmann::json probs = nlohmann::json::array();
        for (const auto &p : f.problems) probs.push_back(to_json(p));
        files.push_back({{"path", f.path},
                         {"role", f.role},
                         {"architecture", f.architecture},
                         {"n_tensors", f.n_tensors},
                         {"bytes", f.bytes},
                         {"skipped", f.skipped},
                         {"derived", f.derived},
                         {"pass", f.problems.empty()},
                         {"problems", probs}});
    }
    nlohmann::json kit = nlohmann::json::array();
    for (const auto &p : r.kit_problems) kit.push_back(to_json(p));
    return {{"path", r.path},
            {"family", "minicpmo45"},
            {"files", files},
            {"kit_problems", kit},
            {"n_problems", r.n_problems()},
            {"pass", r.n_problems() == 0}};
}

}  // namespace rtf::gguf
