#include "twin/tensor-data.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <future>
#include <thread>

#include "core/error.h"
#include "twin/rng.h"

namespace rtf::twin {

int64_t rows_per_chunk(int64_t ne0) { return std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, ne0)); }

void fill_chunk(const TensorStream &t, uint64_t seed, uint64_t chunk, int64_t row0, int64_t nrows, float *out) {
    const int64_t ne0 = t.ne[0];
    const auto n = static_cast<size_t>(ne0 * nrows);
    const gguf::Init &in = t.init;
    if (in.std == 0.0f) {
        std::fill(out, out + n, in.mean);
    } else {
        Rng rng(chunk_seed(seed, t.seed_name, chunk));
        for (size_t i = 0; i < n; ++i) out[i] = in.mean + in.std * rng.bell();
    }
    for (int64_t r = 0; r < nrows; ++r) {
        const int64_t row = row0 + r;
        float *p = out + r * ne0;
        if (in.rows_nonzero >= 0 && row >= in.rows_nonzero) {
            std::fill(p, p + ne0, 0.0f);
            continue;
        }
        p[0] += in.dim0_offset;
        if (in.last_col_special) p[ne0 - 1] = row == 0 ? in.last_col_value : 0.0f;
    }
}

namespace {

// One chunk generated and converted to the tensor's type.
std::vector<uint8_t> make_chunk(const TensorStream &t, const std::string &path, uint64_t seed, uint64_t chunk, int64_t r0,
                                int64_t nr) {
    const int64_t ne0 = t.ne[0];
    const size_t row_bytes = ggml_row_size(t.type, ne0);
    const auto n = static_cast<size_t>(nr * ne0);
    std::vector<uint8_t> dst(static_cast<size_t>(nr) * row_bytes);
    if (t.type == GGML_TYPE_I8 || t.type == GGML_TYPE_I16 || t.type == GGML_TYPE_I32 || t.type == GGML_TYPE_I64)
        return dst;  // index / count tensors: zeros are always valid
    std::vector<float> src(n);
    fill_chunk(t, seed, chunk, r0, nr, src.data());
    switch (t.type) {
        case GGML_TYPE_F32: std::memcpy(dst.data(), src.data(), n * sizeof(float)); break;
        case GGML_TYPE_F16:
            ggml_fp32_to_fp16_row(src.data(), reinterpret_cast<ggml_fp16_t *>(dst.data()), static_cast<int64_t>(n));
            break;
        case GGML_TYPE_BF16:
            ggml_fp32_to_bf16_row(src.data(), reinterpret_cast<ggml_bf16_t *>(dst.data()), static_cast<int64_t>(n));
            break;
        case GGML_TYPE_F64: {
            auto *d = reinterpret_cast<double *>(dst.data());
            for (size_t i = 0; i < n; ++i) d[i] = src[i];
            break;
        }
        default: {
            if (!ggml_is_quantized(t.type)) throw_setup(path + ": cannot generate data of type " + ggml_type_name(t.type));
            std::vector<float> imatrix;
            if (ggml_quantize_requires_imatrix(t.type)) imatrix.assign(static_cast<size_t>(ne0), 1.0f);
            ggml_quantize_chunk(t.type, src.data(), dst.data(), 0, nr, ne0, imatrix.empty() ? nullptr : imatrix.data());
            break;
        }
    }
    return dst;
}

}  // namespace

void write_tensor_data(std::FILE *f, const std::string &path, const TensorStream &t, uint64_t seed,
                       const std::function<void(uint64_t)> &on_bytes) {
    const int64_t rows = t.ne[1] * t.ne[2] * t.ne[3];
    const int64_t per = rows_per_chunk(t.ne[0]);
    // Chunks are independent (own random stream, whole rows), so they are made on worker threads
    // and written in order: the bytes do not depend on the thread count.
    const size_t n_workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
    std::deque<std::future<std::vector<uint8_t>>> inflight;
    auto write_front = [&] {
        const auto buf = inflight.front().get();
        inflight.pop_front();
        if (std::fwrite(buf.data(), 1, buf.size(), f) != buf.size()) throw_setup(path + ": write failed (disk full?)");
        if (on_bytes) on_bytes(buf.size());
    };
    uint64_t chunk = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += per, ++chunk) {
        const int64_t nr = std::min(per, rows - r0);
        if (n_workers == 1) {
            inflight.push_back(std::async(std::launch::deferred, make_chunk, std::cref(t), std::cref(path), seed, chunk, r0, nr));
        } else {
            inflight.push_back(std::async(std::launch::async, make_chunk, std::cref(t), std::cref(path), seed, chunk, r0, nr));
        }
        if (inflight.size() >= n_workers) write_front();
    }
    while (!inflight.empty()) write_front();
}

}  // namespace rtf::twin
