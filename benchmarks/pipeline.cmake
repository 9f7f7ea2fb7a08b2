# Pipeline machinery and profiler overhead (src/pipeline, src/profile).
rtf_add_benchmark(bench-pipeline
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/pipeline/bench-pipeline.cpp
    LIBS rtf_pipeline)
