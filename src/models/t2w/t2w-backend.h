#pragma once
// Creates a ggml backend instance on a device with a thread count (CPU-like backends that
// expose ggml_backend_set_n_threads honour it; others ignore it).
#include <ggml-backend.h>

namespace rtf::t2w {

// Throws rtf::Error(Setup) when the device cannot be initialised.
ggml_backend_t make_backend(ggml_backend_dev_t dev, int n_threads);

}  // namespace rtf::t2w
