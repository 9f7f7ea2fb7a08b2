# LM micro-benchmarks: decode steps of the LLM and the TTS through the decode batcher,
# 1 / 2 / 4 streams merged (src/models/lm/decode-batcher.h), on a kit (rtf twin).
add_executable(bench-decode-batch ${CMAKE_CURRENT_LIST_DIR}/lm/bench-decode-batch.cpp)
target_link_libraries(bench-decode-batch PRIVATE rtf_lm rtf_speak)
rtf_target_warnings(bench-decode-batch)
