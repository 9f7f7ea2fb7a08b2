# Token2Wav micro-benchmarks: one steady window (token2mel, vocoder) on
# RTF_T2W_BENCH_MODELS (a token2wav-gguf dir, e.g. .cache/t2w-golden-twin) or a tiny kit.
rtf_add_benchmark(bench-t2w SOURCES ${CMAKE_CURRENT_LIST_DIR}/t2w/bench-t2w.cpp
    ${PROJECT_SOURCE_DIR}/tests/t2w/tiny-kit.cpp LIBS rtf_t2w)
target_include_directories(bench-t2w PRIVATE ${PROJECT_SOURCE_DIR}/tests/t2w)
# The packed F32 GEMM of token2mel vs ggml's mul_mat on token2mel's shapes (one thread).
rtf_add_benchmark(bench-t2w-gemm SOURCES ${CMAKE_CURRENT_LIST_DIR}/t2w/bench-t2w-gemm.cpp LIBS rtf_t2w)
# The vocoder's ResBlock convs: im2col + packed GEMM + transpose + add vs the direct conv.
rtf_add_benchmark(bench-t2w-conv SOURCES ${CMAKE_CURRENT_LIST_DIR}/t2w/bench-t2w-conv.cpp LIBS rtf_t2w)
# The fused DiT attention at the engine's shape (one thread, hot and cold cache).
rtf_add_benchmark(bench-t2w-attention SOURCES ${CMAKE_CURRENT_LIST_DIR}/t2w/bench-t2w-attention.cpp LIBS rtf_t2w)
