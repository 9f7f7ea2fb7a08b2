#include "models/t2w/t2w-backend.h"

#include <string>

#include "core/error.h"

namespace rtf::t2w {

ggml_backend_t make_backend(ggml_backend_dev_t dev, int n_threads) {
    ggml_backend_t b = ggml_backend_dev_init(dev, nullptr);
    if (!b) throw_setup(std::string("t2w: cannot initialise ggml device ") + ggml_backend_dev_name(dev));
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
    if (set_threads) set_threads(b, n_threads);
    return b;
}

}  // namespace rtf::t2w
