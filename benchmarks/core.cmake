# The cost of `speed` (src/core/time-stretch.h).
rtf_add_benchmark(bench-time-stretch
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/core/bench-time-stretch.cpp
    LIBS rtf_core)
