#pragma once
// The set of weight tensors a packing step rewrote in place (internal to the t2w engine):
// their ggml type and shape are unchanged but their data is no longer a plain matrix, so
// the graph builders must route them to the kernel that packed them. One registry per
// packing (packed-gemm.h, packed-conv.h); process-wide, thread-safe; GgufWeights and the
// Vocoder add at load and remove in their destructors.
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

struct ggml_tensor;

namespace rtf::t2w {

class PackedRegistry {
public:
    void add(const ggml_tensor *w) {
        std::unique_lock lk(mu_);
        set_.insert(w);
    }
    void remove(const ggml_tensor *w) {
        std::unique_lock lk(mu_);
        set_.erase(w);
    }
    bool contains(const ggml_tensor *w) const {
        std::shared_lock lk(mu_);
        return set_.count(w) != 0;
    }

private:
    mutable std::shared_mutex mu_;
    std::unordered_set<const ggml_tensor *> set_;
};

}  // namespace rtf::t2w
