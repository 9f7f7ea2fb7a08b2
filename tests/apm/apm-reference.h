#pragma once
// Plain-loop implementations of the audio encoder's blocks (no ggml), written from the
// spec's description (duplex-input §1.4, §2) for the unit tests of models/apm. Tensors are
// row-major std::vector<float>; a "[T][d]" activation holds token t's d values at t*d.
#include <cstdint>
#include <vector>

namespace rtf::apm::ref {

// Largest |a - b| relative to the largest |b|; infinity when the sizes differ.
double rel_err(const std::vector<float> &a, const std::vector<float> &b);

float gelu(float x);  // tanh approximation (ggml_gelu's)

// Linear layer: W as stored in GGUF ne [in, out] = row-major [out][in]; b may be empty.
std::vector<float> linear(const std::vector<float> &x, int64_t T, int64_t in, const std::vector<float> &W,
                          const std::vector<float> &b, int64_t out);
std::vector<float> layer_norm(const std::vector<float> &x, int64_t T, int64_t d, const std::vector<float> &w,
                              const std::vector<float> &b, float eps);

// Conv1d k 3, pad 1: in [Cin][T_in] (channel-major), W ne [3, Cin, Cout] = [Cout][Cin][3];
// returns [Cout][T_out], T_out = (T_in - 1) / stride + 1.
std::vector<float> conv1d(const std::vector<float> &in, int64_t cin, int64_t t_in, const std::vector<float> &W,
                          const std::vector<float> &b, int64_t cout, int stride);

// The conv front: mel [n_mel][T_mel] -> tokens [T][d] (GELU after each conv).
std::vector<float> conv_front(const std::vector<float> &mel, int64_t n_mel, int64_t t_mel, const std::vector<float> &w1,
                              const std::vector<float> &b1, const std::vector<float> &w2, const std::vector<float> &b2,
                              int64_t d, int64_t *T_out);

struct Layer {
    std::vector<float> ln1_w, ln1_b, q_w, q_b, k_w, v_w, v_b, o_w, o_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
    int64_t n_ff = 0;
};

// One block over x [T][d]; K/V rows of this chunk are appended to kc/vc ([n][d] each) and the
// queries attend to every row there (no mask).
std::vector<float> encoder_layer(const std::vector<float> &x, int64_t T, int64_t d, int64_t n_head, const Layer &l,
                                 std::vector<float> &kc, std::vector<float> &vc, float eps);

// ln_post, linear1, ReLU, linear2, average pooling k = s = 5: x [T][d] -> [n][n_out].
std::vector<float> project_pool(const std::vector<float> &x, int64_t T, int64_t d, const std::vector<float> &ln_w,
                                const std::vector<float> &ln_b, const std::vector<float> &w1, const std::vector<float> &b1,
                                int64_t n_proj, const std::vector<float> &w2, const std::vector<float> &b2, int64_t n_out,
                                int64_t *n_rows);

// Log-mel of one frame by the spec's recipe with a direct O(N^2) DFT in double:
// [n_mel][n / 160], normalised over the frame.
std::vector<float> log_mel(const std::vector<float> &samples, const std::vector<float> &filters, int64_t n_mel);

}  // namespace rtf::apm::ref
