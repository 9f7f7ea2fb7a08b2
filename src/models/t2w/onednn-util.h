#pragma once
// What the oneDNN kernels of the t2w engine share (onednn-linear.cpp, onednn-conv.cpp; only
// compiled with RTF_HAVE_DNNL): the CPU engine, bf16 rounding, and the calling thread's
// scratch and stream. Every call runs single-threaded on its caller (ggml's thread or a
// CFG lane), with a user scratchpad, so concurrent graphs never share oneDNN state.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "models/t2w/bf16-round.h"

struct ggml_tensor;

namespace rtf::t2w::onednn::detail {

// oneDNN's ISA follows the kernel level (core/cpu-features.h, RTF_ISA) unless the user set
// oneDNN's own ONEDNN_MAX_CPU_ISA. Applied once, before anything else of oneDNN runs (it is
// refused after the first primitive): engine() and isa() call it first.
void apply_isa_level();

inline dnnl::engine &engine() {
    apply_isa_level();
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

inline dnnl::stream &thread_stream() {
    thread_local dnnl::stream s(engine());
    return s;
}

using t2w::f32_to_bf16;  // bf16-round.h

// The calling thread's buffers: oneDNN's scratchpad, an input copy (bf16 or transposed), an
// output buffer.
struct ThreadScratch {
    std::vector<uint8_t> pad;
    std::vector<uint16_t> xb;
    std::vector<float> xf, yf;
};
inline ThreadScratch &scratch() {
    thread_local ThreadScratch s;
    return s;
}

// One thread per call: outside an OpenMP region oneDNN would start a team of its own on
// cores ggml's threads or the other CFG lane already use. Also before a primitive is made:
// oneDNN fixes its thread count then (omp_get_max_threads()) and asks for that many at every
// execution, whatever the caller's setting is by then.
inline void single_thread() {
    if (!omp_in_parallel() && omp_get_max_threads() != 1) omp_set_num_threads(1);
}

// The oneDNN objects registered per ggml weight tensor (the handle ops are built on), owned
// here until unregistered. Thread-safe.
template <class T>
class OwnedRegistry {
public:
    void add(const ggml_tensor *k, std::unique_ptr<T> v) {
        std::unique_lock lk(mu_);
        map_[k] = std::move(v);
    }
    void remove(const ggml_tensor *k) {
        std::unique_lock lk(mu_);
        map_.erase(k);
    }
    T *find(const ggml_tensor *k) const {
        std::shared_lock lk(mu_);
        auto it = map_.find(k);
        return it == map_.end() ? nullptr : it->second.get();
    }

private:
    mutable std::shared_mutex mu_;
    std::unordered_map<const ggml_tensor *, std::unique_ptr<T>> map_;
};

// How often a oneDNN implementation ran: one counter per primitive, bumped without a lock
// on every call (the hot path); the list of counters is locked only when a primitive is
// made or the counts are read (onednn::impls_used()).
struct ImplCounter {
    std::string impl;  // "f32 brg:avx512_core", "bf16 conv brgconv:avx512_core_bf16", ...
    std::atomic<int64_t> calls{0};
};
std::shared_ptr<ImplCounter> new_impl_counter(const std::string &impl);

inline dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
}

}  // namespace rtf::t2w::onednn::detail
