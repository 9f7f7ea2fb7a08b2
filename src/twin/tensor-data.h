#pragma once
// Streams the random data of one tensor to a file: generates it chunk by chunk (whole rows,
// about 1 Mi elements each), converts each chunk to the tensor's type (F16/BF16 with ggml's row
// converters, quantised types with ggml_quantize_chunk) and writes it. Memory: a few MiB.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <ggml.h>

#include "models/gguf/layout.h"

namespace rtf::twin {

struct TensorStream {
    std::string seed_name;  // random stream name (tensor name unless shared)
    ggml_type type = GGML_TYPE_F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    gguf::Init init;
};

// Writes the tensor's bytes (exactly ggml_nbytes; no padding). `on_bytes` is called after each
// chunk with the bytes just written. Throws rtf::Error(Setup) naming `path` on a write error.
void write_tensor_data(std::FILE *f, const std::string &path, const TensorStream &t, uint64_t seed,
                       const std::function<void(uint64_t)> &on_bytes);

// Fills `out` (nrows rows of ne0 values, rows row0..row0+nrows-1 of the tensor) as the generator
// does for chunk `chunk`. Exposed for tests.
void fill_chunk(const TensorStream &t, uint64_t seed, uint64_t chunk, int64_t row0, int64_t nrows, float *out);

// Rows per chunk for a row length (at least 1).
int64_t rows_per_chunk(int64_t ne0);

}  // namespace rtf::twin
